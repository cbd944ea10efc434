#pragma once
// What the two fuzz targets of a store connection share: fuzz_store_session (the Asio shell
// over loopback sockets) and fuzz_store_connection (the state machine alone) read one input
// format, and fuzz_store_connection is seeded with fuzz_store_session's corpus, so the
// flags of an input's first byte, the secured server's secret and run, and the small limits
// are the same for both.

#include <cstdint>
#include <string>
#include <string_view>

#include "rendezvous/store/server/store_server_options.h"
#include "rendezvous/store/store_auth.h"
#include "rendezvous/store/store_protocol.h"

namespace pltrun::fuzz {

constexpr std::uint8_t kFlagSecured = 1, kFlagAuthenticate = 2, kFlagFramed = 4;
constexpr char kSecret[] = "fuzz-shared-secret";
constexpr char kRunId[] = "fuzz-run";  // the secured server serves this run only

/// Small limits, so that short inputs reach the over-the-limit paths: the request's sizes
/// (checked on the length fields, before the bytes arrive), and the table's and the
/// buffers' limits, which a few large values, or a few dozen small keys, queue items or
/// parked waits, pass.
inline void applySmallLimits(rdzv::StoreServerOptions& options) {
  options.limits.maxKeySize = 512;
  options.limits.maxValueSize = 64 * 1024;
  options.limits.maxKeysPerRequest = 64;
  options.maxStoreBytes = 256 * 1024;
  options.maxStoreKeys = 48;
}

/// The handshake an authenticating input starts with: a fixed client nonce, for kRunId.
inline rdzv::Handshake clientHandshake() { return {std::string(rdzv::kAuthNonceSize, 'n'), "", kRunId}; }

/// AUTH_HELLO's bytes for `handshake`.
inline std::string helloRequest(const rdzv::Handshake& handshake) {
  rdzv::Request hello;
  hello.command = rdzv::Command::AuthHello;
  hello.keys = {handshake.context};
  hello.values = {handshake.clientNonce};
  return rdzv::encodeRequest(rdzv::Dialect::Torch2, hello);
}

/// The client's answer to the server's: checks `answer` (the server's nonce and proof) and
/// sets `proofRequest` to AUTH_PROOF's bytes. Returns what is wrong with the answer, or
/// nullptr.
inline const char* answerServer(rdzv::Handshake& handshake, std::string_view answer, std::string& proofRequest) {
  if (answer.size() != rdzv::kAuthNonceSize + rdzv::kAuthDigestSize)
    return "the AUTH_HELLO answer is not a nonce and a proof";
  handshake.serverNonce = std::string(answer.substr(0, rdzv::kAuthNonceSize));
  const rdzv::Digest claimed = rdzv::digestOf(answer.substr(rdzv::kAuthNonceSize));
  if (!rdzv::digestsEqual(claimed, rdzv::serverProof(kSecret, handshake))) return "the server's proof is wrong";
  const rdzv::Digest proof = rdzv::clientProof(kSecret, handshake);
  proofRequest.assign(1, static_cast<char>(0xA1));  // AUTH_PROOF
  proofRequest.append(reinterpret_cast<const char*>(proof.data()), proof.size());
  return nullptr;
}

}  // namespace pltrun::fuzz
