// libFuzzer target for the store's wire codec (rendezvous/store_protocol.{h,cc}).
//
// Input: one mode byte, then a byte stream as a client would send it.
//   mode bit 0     dialect when not auto-detected: 0 = torch 2.x, 1 = torch 1.13
//   mode bit 1     auto-detect: the dialect comes from detectDialect(stream), as the server
//                  does (falling back to bit 0 while it cannot tell)
//   mode bits 2-3  which ProtocolLimits (see kLimits)
//   mode bits 4-7  how many bytes more RequestMeasure sees at each step, minus one
//
// The stream is decoded request after request until the decoder stops returning Complete.
// Beyond "does not crash", every step checks properties the server relies on, and traps
// (__builtin_trap, reported by libFuzzer as a crash) when one fails:
//   - detectDialect follows its documented rule (extension bytes undecided, 1..0x9F is
//     1.13, 0 is decided by the VALIDATE magic once five bytes are there);
//   - a Complete request consumed between 1 and the available bytes; any other status
//     consumed nothing; Invalid and Unsupported come with an error text;
//   - decoding is a pure function of the request's own bytes: the request alone decodes
//     the same, and every strict prefix of it is NeedMore (never Invalid), so the server
//     may decode a request that arrives in pieces;
//   - RequestMeasure, fed the stream a few bytes more at a time as reads deliver it, ends
//     with decodeRequest's status, length and error;
//   - round trip: encodeRequest(decoded) reproduces exactly the consumed bytes, and
//     decoding those again is Complete, consumes all of them and yields identical fields.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "rendezvous/store/store_protocol.h"

namespace rdzv = pltrun::rdzv;

namespace {

// Small limits keep the fuzzer from spending its memory on one request; one set of tiny
// limits puts the over-the-limit paths within easy reach.
const rdzv::ProtocolLimits kLimits[4] = {
    {64 * 1024, 1024 * 1024, 1 << 16},  // roomy (still far below the production defaults)
    {8, 16, 3},                         // tiny
    {0, 0, 0},                          // nothing but empty keys/values and empty lists
    {1, 1024 * 1024, 1},                // one one-byte key, large values
};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_store_codec: property violated: %s\n", what);
  __builtin_trap();
}

void check(bool condition, const char* what) {
  if (!condition) fail(what);
}

bool sameRequest(const rdzv::Request& a, const rdzv::Request& b) {
  return a.command == b.command && a.keys == b.keys && a.values == b.values && a.number == b.number;
}

void checkDetection(std::string_view stream, std::optional<rdzv::Dialect> detected) {
  if (stream.empty()) {
    check(!detected, "detectDialect decided on an empty stream");
    return;
  }
  auto first = static_cast<std::uint8_t>(stream[0]);
  if (first >= 0xA0) {
    check(!detected, "detectDialect decided on a pltrun extension byte");
  } else if (first != 0) {
    check(detected == rdzv::Dialect::Torch113, "a first byte in 1..0x9F is not torch 1.13");
  } else if (stream.size() < 5) {
    check(!detected, "detectDialect decided before the VALIDATE magic arrived");
  } else {
    std::uint32_t magic = static_cast<std::uint8_t>(stream[1]) | static_cast<std::uint8_t>(stream[2]) << 8 |
                          static_cast<std::uint8_t>(stream[3]) << 16 |
                          static_cast<std::uint32_t>(static_cast<std::uint8_t>(stream[4])) << 24;
    check(detected == (magic == rdzv::kValidationMagic ? rdzv::Dialect::Torch2 : rdzv::Dialect::Torch113),
          "detectDialect disagrees with the VALIDATE magic");
  }
}

void checkStatusShape(const rdzv::DecodeResult& result, size_t available) {
  switch (result.status) {
    case rdzv::DecodeStatus::Complete:
      check(result.consumed >= 1 && result.consumed <= available, "Complete consumed outside 1..available");
      break;
    case rdzv::DecodeStatus::NeedMore:
      check(result.consumed == 0, "NeedMore consumed bytes");
      break;
    case rdzv::DecodeStatus::Invalid:
    case rdzv::DecodeStatus::Unsupported:
      check(result.consumed == 0, "a refused request consumed bytes");
      check(!result.error.empty(), "a refused request has no error text");
      break;
  }
}

// Every strict prefix of a complete request must ask for more bytes. Checks all short
// prefixes and the last few (where the final length field or value ends), plus the middle;
// all of them would make long requests quadratic.
void checkPrefixes(rdzv::Dialect dialect, std::string_view request, const rdzv::ProtocolLimits& limits) {
  const size_t size = request.size();
  auto checkPrefix = [&](size_t length) {
    rdzv::DecodeResult prefix = rdzv::decodeRequest(dialect, request.substr(0, length), limits);
    check(prefix.status == rdzv::DecodeStatus::NeedMore, "a strict prefix of a complete request is not NeedMore");
  };
  for (size_t length = 0; length < size && length <= 48; ++length) checkPrefix(length);
  for (size_t back = 1; back <= 16 && back < size; ++back) {
    if (size - back > 48) checkPrefix(size - back);
  }
  if (size > 96) checkPrefix(size / 2);
}

// The server measures a request as it arrives (RequestMeasure), `step` bytes more each
// time, and decodes it once whole: the measure must end where decodeRequest does, with the
// same status and error, however the bytes are split.
void checkMeasuredInPieces(rdzv::Dialect dialect, std::string_view pending, const rdzv::DecodeResult& decoded,
                           const rdzv::ProtocolLimits& limits, size_t step) {
  rdzv::RequestMeasure measure(limits);
  rdzv::DecodeStatus status = rdzv::DecodeStatus::NeedMore;
  for (size_t length = std::min(step, pending.size());; length = std::min(length + step, pending.size())) {
    status = measure.advance(dialect, pending.substr(0, length));
    if (status != rdzv::DecodeStatus::NeedMore || length == pending.size()) break;
  }
  check(status == decoded.status, "RequestMeasure in pieces disagrees with decodeRequest's status");
  if (status == rdzv::DecodeStatus::Complete) {
    check(measure.length() == decoded.consumed, "RequestMeasure in pieces ends elsewhere than decodeRequest");
  } else if (status != rdzv::DecodeStatus::NeedMore) {
    check(measure.error() == decoded.error, "RequestMeasure in pieces gives another error than decodeRequest");
  }
}

void checkRoundTrip(rdzv::Dialect dialect, std::string_view original, const rdzv::Request& request,
                    const rdzv::ProtocolLimits& limits) {
  std::string encoded = rdzv::encodeRequest(dialect, request);
  check(!encoded.empty(), "encodeRequest produced nothing for a request the decoder accepted");
  check(encoded == original, "encodeRequest(decodeRequest(bytes)) differs from the bytes");
  rdzv::DecodeResult again = rdzv::decodeRequest(dialect, encoded, limits);
  check(again.status == rdzv::DecodeStatus::Complete, "a re-encoded request does not decode as Complete");
  check(again.consumed == encoded.size(), "a re-encoded request does not consume all of its bytes");
  check(sameRequest(again.request, request), "a re-encoded request decodes to different fields");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  const rdzv::ProtocolLimits& limits = kLimits[(mode >> 2) & 3];

  std::optional<rdzv::Dialect> detected = rdzv::detectDialect(stream);
  checkDetection(stream, detected);
  rdzv::Dialect dialect = (mode & 1) ? rdzv::Dialect::Torch113 : rdzv::Dialect::Torch2;
  if ((mode & 2) && detected) dialect = *detected;

  size_t offset = 0;
  while (offset < stream.size()) {
    std::string_view pending = stream.substr(offset);
    rdzv::DecodeResult result = rdzv::decodeRequest(dialect, pending, limits);
    checkStatusShape(result, pending.size());
    checkMeasuredInPieces(dialect, pending, result, limits, 1 + (mode >> 4));
    if (result.status != rdzv::DecodeStatus::Complete) break;

    std::string_view own = pending.substr(0, result.consumed);
    rdzv::DecodeResult alone = rdzv::decodeRequest(dialect, own, limits);
    check(alone.status == rdzv::DecodeStatus::Complete && alone.consumed == own.size() &&
              sameRequest(alone.request, result.request),
          "a request decodes differently without the bytes that follow it");
    checkPrefixes(dialect, own, limits);
    checkRoundTrip(dialect, own, result.request, limits);
    (void)rdzv::commandName(result.request.command);
    (void)rdzv::hasReply(result.request.command);
    offset += result.consumed;
  }
  return 0;
}
