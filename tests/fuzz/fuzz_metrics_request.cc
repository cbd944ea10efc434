// libFuzzer target for what the metrics endpoint answers (lib/launcher/metrics/
// metrics_request.{h,cc}): bytes as a scraper, a scanner or an attacker sends them, through
// Boost.Beast's request parser set as metrics_server.cc sets it (the head at most the limit,
// no body), fed a few bytes at a time as reads deliver them.
//
// Input: one mode byte, then the bytes.
//   mode bits 0-1  the head's limit: 64, 256, 1024 or 8192 bytes
//   mode bits 2-7  how many bytes more the parser sees at each step, minus one
//
// Beyond "does not crash" (Beast included), it traps (__builtin_trap) when one fails:
//   - a request read whole is answered 200, 404 or 405; 200 only for GET or HEAD of
//     /metrics, with the body for GET alone; 405 always with Allow: GET, HEAD;
//   - a request that fails to parse is answered 400, 413 or 431, never nothing (the peer is
//     still there), and a head past the limit is 431;
//   - no request with a body gets through.

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "launcher/metrics/metrics_request.h"

namespace http = boost::beast::http;

namespace {

void check(bool holds) {
  if (!holds) __builtin_trap();
}

void checkAnswer(http::request_parser<http::empty_body>& parser) {
  const auto& request = parser.get();
  const pltrun::MetricsAnswer answer = pltrun::answerMetricsRequest(request.method_string(), request.target());
  const bool readMethod = request.method_string() == "GET" || request.method_string() == "HEAD";
  check(answer.status == 200 || answer.status == 404 || answer.status == 405);
  check((answer.status == 405) == !readMethod);
  check((answer.status == 405) == (answer.allow == "GET, HEAD"));
  check(!answer.body || (answer.status == 200 && request.method_string() == "GET"));
  if (answer.status == 200) check(request.target().substr(0, pltrun::kMetricsPath.size()) == pltrun::kMetricsPath);
  check(parser.content_length().value_or(0) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  constexpr std::uint32_t kHeadLimits[4] = {64, 256, 1024, 8192};
  const std::uint32_t headLimit = kHeadLimits[data[0] & 3];
  const size_t step = static_cast<size_t>(data[0] >> 2) + 1;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  http::request_parser<http::empty_body> parser;
  parser.header_limit(headLimit);
  parser.body_limit(0);
  boost::beast::error_code error;
  size_t used = 0, seen = 0;
  while (!parser.is_done() && seen < bytes.size()) {
    seen = std::min(bytes.size(), seen + step);
    used += parser.put(boost::asio::buffer(bytes.data() + used, seen - used), error);
    if (error == http::error::need_more) {
      error = {};
      continue;
    }
    if (error) break;
  }
  if (error) {
    const auto status = pltrun::statusForReadError(error);
    check(status && (*status == 400 || *status == 413 || *status == 431));
    if (error == http::error::header_limit) check(*status == 431);
  } else if (parser.is_done()) {
    checkAnswer(parser);
  }
  return 0;
}
