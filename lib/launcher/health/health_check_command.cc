#include "launcher/health/health_check_command.h"

#include <vector>

#include "base/seconds_text.h"
#include "base/terminal_text.h"
#include "launcher/plan/text_parsing.h"
#include "launcher/plan/worker_env.h"
#include "launcher/process/captured_commands.h"

namespace pltrun {
namespace {

using Verdict = HealthCheckResult::Verdict;

// "exited with status 3", "was killed by SIGKILL".
std::string endDescription(const ProcessEnd& end) {
  if (end.signal != 0) return "was killed by " + signalName(end.signal);
  return "exited with status " + std::to_string(end.exitCode);
}

HealthCheckResult verdictOf(const HealthCheckOptions& options, const CapturedRun& run) {
  const std::string tail = outputTail(run.out);
  const std::string output = tail.empty() ? "" : ": " + tail;
  if (!run.end) {
    return {"health-check", Verdict::Failed, "could not start /bin/sh to run '" + options.command + "'"};
  }
  if (run.timedOut) {
    return {"health-check", Verdict::Failed,
            "'" + options.command + "' did not finish within " + secondsText(options.timeout) + " s" + output};
  }
  if (run.end->succeeded()) {
    return {"health-check", Verdict::Passed, "'" + options.command + "' exited with status 0" + output};
  }
  return {"health-check", Verdict::Failed, "'" + options.command + "' " + endDescription(*run.end) + output};
}

}  // namespace

std::string outputTail(const std::string& output) {
  std::vector<std::string_view> lines;
  for (std::string_view line : splitText(output, '\n')) {
    line = trimSpaces(line);
    if (!line.empty()) lines.push_back(line);
  }
  const size_t first = lines.size() > kHealthCheckTailLines ? lines.size() - kHealthCheckTailLines : 0;
  std::string tail;
  for (size_t at = first; at < lines.size(); ++at) tail += (tail.empty() ? "" : " | ") + std::string(lines[at]);
  if (tail.size() > kHealthCheckTailBytes) tail = "..." + tail.substr(tail.size() - kHealthCheckTailBytes);
  return terminalSafeLine(tail);
}

HealthCheckResult runHealthCheckCommand(const HealthCheckOptions& options, const Environment& inherited) {
  // stdout and stderr as one stream, as a terminal would show them; stdin empty.
  CapturedCommand command{"/bin/sh", {"sh", "-c", options.command}, environmentEntries(inherited), "", true};
  return verdictOf(options, runCapturedCommands({command}, options.timeout, -1).front());
}

}  // namespace pltrun
