#pragma once
// What the metrics endpoint answers, without a socket (metrics_server.cc is its Asio shell;
// tests/fuzz/fuzz_metrics_request.cc feeds it bytes): a request's method and target to a
// status, and a failed read to the status it is answered with, or to none (the peer left).

#include <boost/system/error_code.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace pltrun {

/// The path Prometheus scrapes (a query string after it is ignored).
inline constexpr std::string_view kMetricsPath = "/metrics";
/// Its Content-Type: Prometheus's text exposition format.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

struct MetricsAnswer {
  int status = 200;   ///< 200, 404 (another path) or 405 (another method)
  bool body = false;  ///< the metrics' text goes out (GET /metrics); HEAD sends only its length
  std::string allow;  ///< the Allow header's value (405 only)
};

/// GET or HEAD of /metrics (a query string allowed) → 200; another method → 405 with
/// Allow: GET, HEAD; another target → 404. The method is checked first: a POST anywhere is 405.
MetricsAnswer answerMetricsRequest(std::string_view method, std::string_view target);

/// The status a request that could not be read is answered with, before the connection
/// closes: a head over the limit 431, a body (none is accepted) 413, any other malformed
/// request 400. None where nothing can be answered: the peer closed or reset the connection,
/// the idle timeout passed, or the server is stopping.
std::optional<int> statusForReadError(const boost::system::error_code& error);

}  // namespace pltrun
