#include "launcher/command_line/torchrun_flags.h"

#include <algorithm>

#include "launcher/plan/numa_binding.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {

void checkTorchrunOnlyFlags(const RawFlags& raw) {
  // "default" is torchrun's own layout (DefaultLogsSpecs), which pltrun's is.
  if (!raw.logsSpecs.empty() && raw.logsSpecs != "default") {
    throwInvalidFlag("--logs-specs", raw.logsSpecs,
                     "it names a Python plugin of torchrun's (torchrun.logs_specs); pltrun writes its own layout: "
                     "--log-dir, -r/--redirects, -t/--tee, --local-ranks-filter (default is accepted)");
  }
  if (!raw.eventLogHandler.empty() && raw.eventLogHandler != "null") {
    throwInvalidFlag("--event-log-handler", raw.eventLogHandler,
                     "torch's event handlers are Python plugins; pltrun writes its events to events.jsonl under "
                     "--log-dir (null is accepted)");
  }
  for (std::string_view name : splitText(raw.signalsToHandle, ',')) {
    const std::string_view signal = trimSpaces(name);
    if (signal.empty()) continue;
    if (signal != "SIGTERM" && signal != "SIGINT" && signal != "SIGHUP" && signal != "SIGQUIT" && signal != "SIGUSR1" &&
        signal != "SIGUSR2") {
      throwInvalidFlag("--signals-to-handle", raw.signalsToHandle,
                       "pltrun forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the workers, always; "
                       "it cannot take " +
                           std::string(signal));
    }
  }
}

std::vector<std::string> parseDuplicateFilters(const std::string& text) {
  std::vector<std::string> filters;
  std::string current;
  for (size_t at = 0; at < text.size(); ++at) {
    if (text[at] != ',') {
      current += text[at];
    } else if (at + 1 < text.size() && text[at + 1] == ',') {
      current += ',';  // ",," is a comma inside the filter
      ++at;
    } else {
      filters.push_back(current);
      current.clear();
    }
  }
  filters.push_back(current);
  // An empty filter would match every line; torchrun's "empty list" duplicates nothing.
  filters.erase(std::remove(filters.begin(), filters.end(), std::string()), filters.end());
  return filters;
}

namespace {

// --term-timeout is pltrun's name, --shutdown-timeout torchrun 2.14's; both at once must agree.
void applyShutdownTimeout(const RawFlags& raw, const Environment& env, LaunchConfig& config) {
  if (!raw.shutdownTimeout.empty()) {
    const auto timeout = parseSecondsFlag("--shutdown-timeout", raw.shutdownTimeout);
    if (!raw.termTimeout.empty() && timeout != config.termTimeout) {
      throw Error(ErrorCode::InvalidArgument, "--term-timeout " + raw.termTimeout + " and --shutdown-timeout " +
                                                  raw.shutdownTimeout + " disagree; give one of them");
    }
    config.termTimeout = timeout;
    return;
  }
  auto variable = env.find("TORCH_ELASTIC_SHUTDOWN_TIMEOUT");
  if (raw.termTimeout.empty() && variable != env.end() && !variable->second.empty()) {
    config.termTimeout = parseSecondsFlag("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", variable->second);
  }
}

}  // namespace

void applyTorchrun214Flags(const RawFlags& raw, const Environment& env, LaunchConfig& config) {
  applyShutdownTimeout(raw, env, config);
  config.virtualLocalRank = raw.virtualLocalRank;
  if (!raw.numaBinding.empty()) config.numaBinding = parseNumaMode(raw.numaBinding);
  if (!raw.linePrefixTemplate.empty()) config.linePrefixTemplate = raw.linePrefixTemplate;
  config.duplicateStdoutFilters = parseDuplicateFilters(raw.duplicateStdoutFilters);
  config.duplicateStderrFilters = parseDuplicateFilters(raw.duplicateStderrFilters);
}

std::string healthCheckPortNotice(const Environment& env) {
  auto port = env.find("TORCHELASTIC_HEALTH_CHECK_PORT");
  if (port == env.end()) return "";
  return "TORCHELASTIC_HEALTH_CHECK_PORT=" + port->second +
         " is set: no health-check server is started (open-source torchrun starts none either); for the job's "
         "health ask `pltrun status`, or watch --stall-timeout";
}

}  // namespace pltrun
