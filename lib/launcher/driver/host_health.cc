#include "launcher/driver/host_health.h"

#include <optional>
#include <sstream>

#include "base/seconds_text.h"
#include "launcher/driver/agent_command_line.h"
#include "launcher/driver/agent_stdin.h"
#include "launcher/driver/remote_command.h"

namespace pltrun {
namespace {

// Time for the connection (ssh's handshake) and NVML's GPU checks, besides --health-check's own.
constexpr std::chrono::seconds kConnectionAndGpuChecks{30};
// ssh's exit status for its own errors (no connection, refused key), never the remote command's.
constexpr int kTransportFailed = 255;
// The shell's status for a command it could not find.
constexpr int kCommandNotFound = 127;
// pltrun's status for a command line it refuses.
constexpr int kUsageError = 2;

// The last line of `text` with something on it; empty when none.
std::string lastLine(const std::string& text) {
  std::istringstream lines(text);
  std::string line, last;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last;
}

// pltrun health's verdict: the last line of its output that is a JSON object with a
// boolean "healthy" (a remote shell's start-up files may print lines of their own before).
std::optional<nlohmann::json> verdictLine(const std::string& out) {
  std::optional<nlohmann::json> found;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line.front() != '{') continue;
    nlohmann::json json = nlohmann::json::parse(line, nullptr, false);
    if (json.is_object() && json.contains("healthy") && json["healthy"].is_boolean()) found = std::move(json);
  }
  return found;
}

// Why a check that gave no verdict did not run, from how it ended.
std::string whyNoVerdict(const CapturedRun& run, bool overTransport) {
  const std::string said = lastLine(run.err).empty() ? "" : ": " + lastLine(run.err);
  const ProcessEnd& end = *run.end;
  if (overTransport && end.signal == 0 && end.exitCode == kTransportFailed) {
    return "could not reach it (exit status 255: ssh's or the remote command's own error)" + said;
  }
  if (end.signal == 0 && end.exitCode == kCommandNotFound) {
    return "pltrun health could not run there (exit status 127: no pltrun at that path, or one older than `pltrun "
           "health`)" +
           said;
  }
  if (end.signal == 0 && end.exitCode == kUsageError) {
    return "pltrun health refused its command line (exit status 2: a pltrun older than these flags?)" + said;
  }
  return "pltrun health gave no verdict (" + end.describe() + ")" + said;
}

}  // namespace

HostHealth hostHealthFrom(const std::string& host, const CapturedRun& run, bool overTransport,
                          std::chrono::milliseconds limit) {
  HostHealth health;
  health.host = host;
  if (!run.startError.empty()) {
    health.reason = "the check could not be started here: " + run.startError;
  } else if (run.timedOut) {
    health.reason = "no answer from pltrun health within " + secondsText(limit, 0) + " s";
  } else if (const std::optional<nlohmann::json> verdict = verdictLine(run.out)) {
    health.checks = verdict->value("checks", nlohmann::json::array());
    const std::string reason =
        verdict->contains("reason") && (*verdict)["reason"].is_string() ? (*verdict)["reason"].get<std::string>() : "";
    health.healthy = (*verdict)["healthy"].get<bool>() && run.end->succeeded();
    if (!health.healthy) {
      health.reason = !reason.empty() ? reason : "pltrun health ended with " + run.end->describe();
    }
  } else {
    health.reason = whyNoVerdict(run, overTransport);
  }
  return health;
}

std::chrono::milliseconds hostCheckLimit(const LaunchConfig& config) {
  const std::chrono::milliseconds command =
      config.healthCheck.empty() ? std::chrono::milliseconds(0) : config.healthCheckTimeout;
  return command + kConnectionAndGpuChecks;
}

std::vector<HostHealth> checkHostsHealth(const HostCheckLaunch& launch) {
  const RemoteLaunchSettings& remote = launch.config.remote;
  const std::vector<std::string> arguments = healthCommandArguments(launch.config);
  std::vector<CapturedCommand> commands;
  for (const HostSlots& host : remote.hosts) {
    HostCommand command = pltrunOnHost(remote, host.host, launch.localName, launch.path, arguments);
    // No secret: the check joins no rendezvous.
    commands.push_back(CapturedCommand{std::move(command.executable), std::move(command.argv), launch.environment,
                                       forwardedVariablesInput(launch.forwarded)});
  }
  const std::chrono::milliseconds limit = hostCheckLimit(launch.config);
  const std::vector<CapturedRun> runs = runCapturedCommands(commands, limit, launch.guardFd);
  std::vector<HostHealth> verdicts;
  for (size_t index = 0; index < runs.size(); ++index) {
    const std::string& host = remote.hosts[index].host;
    verdicts.push_back(hostHealthFrom(host, runs[index], !startsOnThisMachine(remote, host, launch.localName), limit));
  }
  return verdicts;
}

}  // namespace pltrun
