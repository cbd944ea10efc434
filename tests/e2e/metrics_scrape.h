#pragma once
// Reading a live pltrun's `--metrics` endpoint in the end-to-end tests: the port it printed
// ("metrics at http://ADDR:PORT/metrics"), one scrape, and a sample's value picked out of
// Prometheus's text format by its name and some of its labels.

#include <chrono>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "e2e/loopback_http.h"
#include "helpers/child_process.h"

namespace pltrun::test {

/// The port `launcher` said its metrics are at; 0 when it said nothing within `timeout`.
inline int metricsPort(const ChildProcess& launcher, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const std::regex line("metrics at http://127\\.0\\.0\\.1:([0-9]+)/metrics\n");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::smatch match;
    const std::string err = launcher.stderrSoFar();
    if (std::regex_search(err, match, line)) return std::stoi(match[1].str());
    if (std::chrono::steady_clock::now() > deadline) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// GET /metrics: its body; throws when the answer is not 200.
inline std::string scrapeMetrics(int port) {
  const HttpAnswer answer = httpGet(port, "/metrics");
  if (answer.status != 200) throw std::runtime_error("GET /metrics answered " + std::to_string(answer.status));
  return answer.body;
}

using Labels = std::map<std::string, std::string>;

/// The labels of one sample line's `{...}` (values without their quotes; the tests' values
/// hold no escapes).
inline Labels sampleLabels(const std::string& inside) {
  Labels labels;
  static const std::regex pair("([a-zA-Z_][a-zA-Z0-9_]*)=\"([^\"]*)\"");
  for (std::sregex_iterator at(inside.begin(), inside.end(), pair), end; at != end; ++at) {
    labels[(*at)[1].str()] = (*at)[2].str();
  }
  return labels;
}

/// Every sample of metric `name` whose labels include `wanted`: its labels and value.
inline std::vector<std::pair<Labels, double>> samples(const std::string& text, const std::string& name,
                                                      const Labels& wanted = {}) {
  std::vector<std::pair<Labels, double>> found;
  std::istringstream lines(text);
  static const std::regex sample("([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)\\})? (\\S+)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (line.empty() || line[0] == '#' || !std::regex_match(line, match, sample) || match[1].str() != name) continue;
    const Labels labels = sampleLabels(match[3].str());
    bool fits = true;
    for (const auto& [key, value] : wanted) {
      auto have = labels.find(key);
      fits = fits && have != labels.end() && have->second == value;
    }
    if (fits) found.emplace_back(labels, std::stod(match[4].str()));
  }
  return found;
}

/// The value of the one sample of `name` with `wanted` among its labels; none when there is
/// no such sample (or more than one).
inline std::optional<double> sampleValue(const std::string& text, const std::string& name, const Labels& wanted = {}) {
  const auto found = samples(text, name, wanted);
  if (found.size() != 1) return std::nullopt;
  return found.front().second;
}

}  // namespace pltrun::test
