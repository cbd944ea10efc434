#pragma once
// A real Prometheus (Debian's prometheus 2.42, installed by scripts/install-deps.sh) for the
// metrics tests: started as the test's child on 127.0.0.1 port 0 (its port read back from
// /proc: Prometheus logs only the address it was given), its data in a temporary directory,
// queried through its HTTP API (/api/v1/query) as an operator's dashboard would. What it
// scrapes is set, and changed, while it runs (a config file rewritten, then SIGHUP), so it
// can start before the job whose port it will scrape is known. Stopped (SIGTERM, then
// SIGKILL after 10 s) and reaped when it goes away.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

/// One scrape job of the config: every target ("127.0.0.1:PORT") scraped every second, at
/// /metrics, with honor_labels: true (the exposition's own `job` label is kept, not renamed
/// exported_job: what docs/METRICS.md's scrape config says).
struct ScrapeJob {
  std::string name;
  std::vector<std::string> targets;
};

/// One series of an instant query's vector: its labels and value.
struct PromSample {
  std::map<std::string, std::string> labels;
  double value = 0;
  /// The label `name`, or "" when the series has none.
  std::string label(const std::string& name) const;
};

/// An expression Prometheus refused (a parse error, a failed evaluation): its errorType and
/// error.
struct PromQueryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a wait for a query's answer ended with: whether the condition was met, and the last
/// answer (for the failing check's message).
struct PromWait {
  bool met = false;
  std::vector<PromSample> last;
};

class PrometheusServer {
 public:
  /// Starts Prometheus scraping nothing and waits (up to 30 s) until it is ready. Throws
  /// std::runtime_error with its log when it is missing or does not become ready.
  PrometheusServer();
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return process_->pid(); }
  /// "127.0.0.1:PORT": its own /metrics, a target it can scrape itself.
  std::string address() const;

  /// Scrapes `jobs` from now on (instead of what it scraped before): the config is rewritten
  /// and reloaded, and this returns once Prometheus runs it (up to 10 s).
  void scrape(const std::vector<ScrapeJob>& jobs);

  /// The instant query `promql` now: its vector (a scalar answer is one sample without
  /// labels). Throws PromQueryError when Prometheus refuses the expression.
  std::vector<PromSample> query(const std::string& promql) const;
  /// Queries `promql` every 250 ms until `met` accepts the answer or `timeout` passes.
  PromWait waitFor(const std::string& promql, const std::function<bool(const std::vector<PromSample>&)>& met,
                   std::chrono::milliseconds timeout) const;

  /// What Prometheus logged so far (stderr), for a failing test's message.
  std::string log() const;

 private:
  void waitUntilReady();
  std::string configText(const std::vector<ScrapeJob>& jobs) const;

  TempDir dir_{"pltrun-prometheus"};
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
};

/// `promtool check metrics` on `exposition` (given on its stdin): exit status 0 when the text
/// parses and follows Prometheus's naming conventions; its output says what it found.
Finished promtoolCheckMetrics(const std::string& exposition);

}  // namespace pltrun::test
