#pragma once
// A writer of Prometheus's text exposition format, version 0.0.4: each family's # HELP and
// # TYPE lines, then its samples, together; label values and help texts escaped as the
// format says; numbers as Prometheus reads them (+Inf, -Inf, NaN). Pure: it builds a string.

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pltrun {

/// Label names and values, in the order they are written.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { Gauge, Counter };

class PrometheusText {
 public:
  /// `common` come first on every sample (the job's and the node's labels).
  explicit PrometheusText(MetricLabels common = {}) : common_(std::move(common)) {}

  /// Starts the family `name`: its # HELP and # TYPE lines. A family is written once: a
  /// second start of the same name throws std::logic_error (its samples would be split).
  void family(const std::string& name, MetricType type, std::string_view help);
  /// A sample of the family started last, with the common labels and then `labels`.
  void sample(const MetricLabels& labels, double value);
  void sample(const MetricLabels& labels, long long value);

  const std::string& text() const { return text_; }

 private:
  void writeName(const MetricLabels& labels);

  MetricLabels common_;
  std::string family_;
  std::set<std::string> written_;
  std::string text_;
};

/// A label value as the format quotes it: backslash, double quote and newline escaped.
std::string escapedLabelValue(std::string_view value);
/// A # HELP text: backslash and newline escaped.
std::string escapedHelp(std::string_view help);
/// A sample's value: the shortest text that reads back as the same double; +Inf, -Inf, NaN.
std::string metricNumber(double value);

}  // namespace pltrun
