#pragma once
// The store's shared-secret handshake: both sides prove they hold the secret, over nonces
// that both sides chose for this connection, so no proof can be replayed on another
// connection and no store can pass by relaying what a client proved. HMAC-SHA256 and the
// random nonces come from OpenSSL's libcrypto.
//
//   client -> AUTH_HELLO  client nonce (32 bytes), context (the run id the client is in)
//   server <- server nonce (32 bytes), server proof
//   client -> AUTH_PROOF  client proof       (only after the server's proof checked out)
//   server <- u8 1                           (a wrong proof closes the connection)
//
// proof = HMAC-SHA256(secret, label || client nonce || server nonce || context), with a
// different label for each side, so one side's proof is never a valid answer for the other.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace pltrun::rdzv {

using Digest = std::array<std::uint8_t, 32>;

/// The length of each side's nonce and of a proof.
constexpr size_t kAuthNonceSize = 32;

/// What both proofs of one connection cover.
struct Handshake {
  std::string clientNonce;  ///< kAuthNonceSize bytes
  std::string serverNonce;  ///< kAuthNonceSize bytes
  std::string context;      ///< the run id the client asked for (may be empty)
};

Digest hmacSha256(std::string_view key, std::string_view message);

/// What the store answers AUTH_HELLO with, after its nonce.
Digest serverProof(std::string_view secret, const Handshake& handshake);
/// What the client sends in AUTH_PROOF.
Digest clientProof(std::string_view secret, const Handshake& handshake);

/// Compares in time independent of where the first difference is.
bool digestsEqual(const Digest& a, const Digest& b);
/// `bytes` (32 of them, as read from the wire) as a Digest.
Digest digestOf(std::string_view bytes);

/// `count` bytes from the operating system's random generator (throws std::runtime_error
/// if it has none to give).
std::string randomBytes(size_t count);

/// Lowercase hex of any bytes.
std::string toHex(std::string_view bytes);

}  // namespace pltrun::rdzv
