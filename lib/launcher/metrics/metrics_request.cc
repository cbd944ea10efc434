#include "launcher/metrics/metrics_request.h"

#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

namespace pltrun {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

bool isMetricsTarget(std::string_view target) {
  if (target.substr(0, kMetricsPath.size()) != kMetricsPath) return false;
  return target.size() == kMetricsPath.size() || target[kMetricsPath.size()] == '?';
}

}  // namespace

MetricsAnswer answerMetricsRequest(std::string_view method, std::string_view target) {
  if (method != "GET" && method != "HEAD") return {405, false, "GET, HEAD"};
  if (!isMetricsTarget(target)) return {404, false, ""};
  return {200, method == "GET", ""};
}

std::optional<int> statusForReadError(const boost::system::error_code& error) {
  // The peer left, was silent too long, or the server stops: there is no one to answer.
  if (error == http::error::end_of_stream || error == http::error::partial_message || error == asio::error::eof ||
      error == beast::error::timeout || error == asio::error::operation_aborted ||
      error == asio::error::connection_reset || error == asio::error::broken_pipe ||
      error == asio::error::bad_descriptor) {
    return std::nullopt;
  }
  // A head longer than the limit; a buffer full before the head ended is the same request.
  if (error == http::error::header_limit || error == http::error::buffer_overflow) return 431;
  if (error == http::error::body_limit || error == http::error::unexpected_body) return 413;
  return 400;
}

}  // namespace pltrun
