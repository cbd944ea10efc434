#include "launcher/health/health_check_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "base/seconds_text.h"
#include "base/terminal_text.h"
#include "launcher/plan/text_parsing.h"
#include "launcher/process/descendant_sweep.h"
#include "launcher/process/process_end.h"

namespace pltrun {
namespace {

using Verdict = HealthCheckResult::Verdict;
using Clock = std::chrono::steady_clock;

// The command's process, its output's read end, and what it has written.
struct CommandRun {
  pid_t pid = -1;
  int output = -1;
  std::string text;
  int status = 0;
  bool exited = false;
};

// /bin/sh -c COMMAND in a new process group, stdin /dev/null, stdout and stderr to `output`.
pid_t spawnShell(const std::string& command, const Environment& inherited, int output) {
  std::vector<std::string> variables;
  for (const auto& [name, value] : inherited) variables.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& variable : variables) envp.push_back(variable.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, output, 1);
  posix_spawn_file_actions_adddup2(&actions, output, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(command.c_str()), nullptr};
  pid_t child = -1;
  const int failed = posix_spawn(&child, "/bin/sh", &actions, &attributes, argv, envp.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  return failed == 0 ? child : -1;
}

// Reads what is there now; false once the output has ended.
bool readAvailable(CommandRun& run) {
  char buffer[4096];
  for (;;) {
    const ssize_t count = read(run.output, buffer, sizeof buffer);
    if (count > 0) {
      run.text.append(buffer, static_cast<size_t>(count));
      // Only the end is kept: a chatty script must not grow the agent without bound.
      if (run.text.size() > 64 * kHealthCheckTailBytes) run.text.erase(0, run.text.size() - 8 * kHealthCheckTailBytes);
      continue;
    }
    if (count < 0 && errno == EINTR) continue;
    return count < 0 && errno == EAGAIN;
  }
}

// Waits for the shell to end (and reads its output) until `deadline`; true when it ended.
// What it left running in its group, holding the pipe, is not waited for.
bool waitForEnd(CommandRun& run, Clock::time_point deadline) {
  bool open = true;
  while (Clock::now() < deadline) {
    if (waitpid(run.pid, &run.status, WNOHANG) == run.pid) {
      run.exited = true;
      readAvailable(run);
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd watched{run.output, POLLIN, 0};
    const int slice = static_cast<int>(std::max<long long>(1, std::min<long long>(left, open ? 100 : 10)));
    if (open && poll(&watched, 1, slice) > 0) {
      open = readAvailable(run);
    } else if (!open) {
      usleep(static_cast<useconds_t>(slice) * 1000);
    }
  }
  return false;
}

std::string exitDescription(int status) {
  if (WIFSIGNALED(status)) return "was killed by " + signalName(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

HealthCheckResult verdictOf(const HealthCheckOptions& options, const CommandRun& run, bool ended) {
  const std::string tail = outputTail(run.text);
  const std::string output = tail.empty() ? "" : ": " + tail;
  if (!ended) {
    return {"health-check", Verdict::Failed,
            "'" + options.command + "' did not finish within " + secondsText(options.timeout) + " s" + output};
  }
  const bool passed = WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0;
  if (passed) return {"health-check", Verdict::Passed, "'" + options.command + "' exited with status 0" + output};
  return {"health-check", Verdict::Failed, "'" + options.command + "' " + exitDescription(run.status) + output};
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
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) {
    return {"health-check", Verdict::Failed, "could not run '" + options.command + "': no pipe"};
  }
  CommandRun run;
  run.pid = spawnShell(options.command, inherited, pipeFds[1]);
  close(pipeFds[1]);
  if (run.pid < 0) {
    close(pipeFds[0]);
    return {"health-check", Verdict::Failed, "could not start /bin/sh to run '" + options.command + "'"};
  }
  claimOwnChild(run.pid);  // pltrun's reaper of adopted children leaves it to us
  run.output = pipeFds[0];
  fcntl(run.output, F_SETFL, O_NONBLOCK);
  const bool ended = waitForEnd(run, Clock::now() + options.timeout);
  kill(-run.pid, SIGKILL);  // late, or what it left running in its group
  if (!run.exited) waitpid(run.pid, &run.status, 0);
  releaseOwnChild(run.pid);
  close(run.output);
  return verdictOf(options, run, ended);
}

}  // namespace pltrun
