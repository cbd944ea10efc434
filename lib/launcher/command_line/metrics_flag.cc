#include "launcher/command_line/metrics_flag.h"

#include <algorithm>
#include <cctype>

#include "launcher/command_line/rendezvous_flags.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

constexpr const char* kMetricsForms =
    "expected ADDR:PORT like 127.0.0.1:9402 or [::1]:9402, or PORT (or :PORT) alone for 127.0.0.1; PORT 0..65535, "
    "0 picks a free one";  // not 9400 in the example: the DCGM exporter's port, often on the same hosts

bool allDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// ADDR:PORT whose PORT is digits past 65535: said as plainly as for PORT alone.
bool portAbove65535(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || !allDigits(text.substr(colon + 1))) return false;
  const auto port = parseInteger(text.substr(colon + 1));
  return !port || *port > 65535;
}

}  // namespace

Endpoint parseMetricsEndpoint(const std::string& flag, const std::string& text) {
  const std::string_view whole = trimSpaces(text);
  const std::string_view portOnly = whole.substr(!whole.empty() && whole.front() == ':' ? 1 : 0);
  if (allDigits(portOnly)) {
    const auto port = parseInteger(portOnly);
    if (!port || *port > 65535) throwInvalidFlag(flag, text, std::string("the port is above 65535; ") + kMetricsForms);
    return {"127.0.0.1", static_cast<int>(*port)};
  }
  if (whole.empty() || whole.front() == ':') throwInvalidFlag(flag, text, kMetricsForms);
  Endpoint endpoint;
  try {
    endpoint = parseEndpoint(flag, text, -1);
  } catch (const Error&) {
    if (portAbove65535(whole)) throwInvalidFlag(flag, text, std::string("the port is above 65535; ") + kMetricsForms);
    throwInvalidFlag(flag, text, kMetricsForms);  // parseEndpoint's forms allow no port; these need one
  }
  if (endpoint.port < 0) throwInvalidFlag(flag, text, std::string("the port is missing; ") + kMetricsForms);
  return endpoint;
}

}  // namespace pltrun
