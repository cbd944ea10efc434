#include "launcher/metrics/prometheus_text.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace pltrun {

namespace {

// The format's escapes: a backslash and a newline everywhere, a double quote inside a
// label's quotes.
std::string escaped(std::string_view text, bool quoted) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '\n') {
      escaped += "\\n";
    } else if (c == '"' && quoted) {
      escaped += "\\\"";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

}  // namespace

std::string escapedLabelValue(std::string_view value) { return escaped(value, true); }

std::string escapedHelp(std::string_view help) { return escaped(help, false); }

std::string metricNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // fmt, not std::to_chars: the wheel builds with g++ 10 (site_config_file.cc says more).
  return fmt::format("{}", value);
}

void PrometheusText::family(const std::string& name, MetricType type, std::string_view help) {
  if (!written_.insert(name).second) throw std::logic_error("metric family " + name + " written twice");
  family_ = name;
  text_ += "# HELP " + name + " " + escapedHelp(help) + "\n";
  text_ += "# TYPE " + name + (type == MetricType::Counter ? " counter\n" : " gauge\n");
}

void PrometheusText::writeName(const MetricLabels& labels) {
  if (family_.empty()) throw std::logic_error("a metric sample before its family");
  text_ += family_;
  bool first = true;
  const MetricLabels* lists[] = {&common_, &labels};
  for (const MetricLabels* list : lists) {
    for (const auto& [name, value] : *list) {
      text_ += first ? "{" : ",";
      text_ += name + "=\"" + escapedLabelValue(value) + "\"";
      first = false;
    }
  }
  if (!first) text_ += "}";
}

void PrometheusText::sample(const MetricLabels& labels, double value) {
  writeName(labels);
  text_ += " " + metricNumber(value) + "\n";
}

void PrometheusText::sample(const MetricLabels& labels, long long value) {
  writeName(labels);
  text_ += " " + std::to_string(value) + "\n";
}

}  // namespace pltrun
