#include "rendezvous/store/store_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

namespace pltrun::rdzv {
namespace {

// Fixed, equal-length labels: the nonces have fixed lengths and the context comes last, so
// no two different handshakes hash the same bytes.
constexpr std::string_view kServerLabel = "pltrun-store-auth-v2 server";
constexpr std::string_view kClientLabel = "pltrun-store-auth-v2 client";

Digest proof(std::string_view label, std::string_view secret, const Handshake& handshake) {
  std::string message;
  message.reserve(label.size() + handshake.clientNonce.size() + handshake.serverNonce.size() +
                  handshake.context.size());
  message.append(label).append(handshake.clientNonce).append(handshake.serverNonce).append(handshake.context);
  return hmacSha256(secret, message);
}

}  // namespace

Digest hmacSha256(std::string_view key, std::string_view message) {
  Digest digest{};
  unsigned int length = 0;
  // HMAC() wants a non-null key pointer even for an empty key.
  static const unsigned char kEmpty = 0;
  const void* keyBytes = key.empty() ? static_cast<const void*>(&kEmpty) : static_cast<const void*>(key.data());
  if (HMAC(EVP_sha256(), keyBytes, static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
           message.size(), digest.data(), &length) == nullptr ||
      length != digest.size()) {
    throw std::runtime_error("libcrypto's HMAC-SHA256 failed");
  }
  return digest;
}

Digest serverProof(std::string_view secret, const Handshake& handshake) {
  return proof(kServerLabel, secret, handshake);
}

Digest clientProof(std::string_view secret, const Handshake& handshake) {
  return proof(kClientLabel, secret, handshake);
}

bool digestsEqual(const Digest& a, const Digest& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

Digest digestOf(std::string_view bytes) {
  Digest digest{};
  std::copy_n(bytes.begin(), std::min(bytes.size(), digest.size()), digest.begin());
  return digest;
}

std::string randomBytes(size_t count) {
  std::string bytes(count, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(count)) != 1) {
    throw std::runtime_error("the system's random generator gave no bytes");
  }
  return bytes;
}

std::string toHex(std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto byte = static_cast<std::uint8_t>(c);
    text += kHex[byte >> 4];
    text += kHex[byte & 15];
  }
  return text;
}

}  // namespace pltrun::rdzv
