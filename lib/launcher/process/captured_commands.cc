#include "launcher/process/captured_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launcher/process/child_spawn.h"
#include "launcher/process/orphan_guard.h"

namespace pltrun {
namespace {

// After the deadline's SIGKILL, how long pipes that a stray descendant holds may stay open.
constexpr std::chrono::milliseconds kDrainAfterKill{2000};

// One command on its way: its child and the parent's ends of its three pipes (-1: closed).
struct Running {
  pid_t pid = -1;
  int pidfd = -1;
  int input = -1;
  int output = -1;
  int error = -1;
  size_t written = 0;  ///< of its standard input
};

void closeFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Starts `command` with its three pipes; on failure, run.startError says why.
Running startCommand(const CapturedCommand& command, int guardFd, CapturedRun& run) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  Running running;
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    run.startError = std::string("pipe: ") + std::strerror(errno);
    for (int* fd : {&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]}) closeFd(*fd);
    return running;
  }
  std::vector<char*> argv = nullTerminated(command.argv);
  std::vector<char*> envp = nullTerminated(command.environment);
  ChildSetup setup;
  setup.executable = command.executable.c_str();
  setup.argv = argv.data();
  setup.envp = envp.data();
  setup.standardInput = in[0];
  setup.standardOutput = out[1];
  setup.standardError = command.errorToOutput ? out[1] : err[1];
  setup.guardFd = guardFd;
  setup.openFileLimit = openFileLimitAtStart();
  SpawnFailure failure;
  const SpawnedChild child = spawnChild(setup, failure);
  for (int* fd : {&in[0], &out[1], &err[1]}) closeFd(*fd);  // the child's ends
  if (child.pid < 0) {
    if (failure.childWasCreated && guardFd >= 0) writeGuardRecord(guardFd, -failure.childPid);
    run.startError = std::string(failure.step) + ": " + std::strerror(failure.error);
    for (int* fd : {&in[1], &out[0], &err[0]}) closeFd(*fd);
    return running;
  }
  for (int fd : {in[1], out[0], err[0]}) fcntl(fd, F_SETFL, O_NONBLOCK);
  running = Running{child.pid, child.pidfd, in[1], out[0], err[0], 0};
  if (command.standardInput.empty()) closeFd(running.input);
  if (command.errorToOutput) closeFd(running.error);  // nothing writes to it
  return running;
}

// Keeps the end of `text` within the limit.
void appendKept(std::string& text, const char* data, size_t size) {
  text.append(data, size);
  if (text.size() > kCapturedOutputLimit) text.erase(0, text.size() - kCapturedOutputLimit);
}

void readAvailable(int& fd, std::string& text) {
  char buffer[4096];
  for (;;) {
    const ssize_t count = read(fd, buffer, sizeof buffer);
    if (count > 0) {
      appendKept(text, buffer, static_cast<size_t>(count));
      continue;
    }
    if (count < 0 && errno == EINTR) continue;
    if (count == 0 || errno != EAGAIN) closeFd(fd);  // its end, or an error: no more
    return;
  }
}

void writeAvailable(Running& running, const std::string& input) {
  while (running.written < input.size()) {
    const ssize_t count = write(running.input, input.data() + running.written, input.size() - running.written);
    if (count > 0) {
      running.written += static_cast<size_t>(count);
      continue;
    }
    if (count < 0 && (errno == EINTR)) continue;
    if (count < 0 && errno == EAGAIN) return;
    break;  // it closed its standard input (EPIPE: SIGPIPE is blocked) and reads no more
  }
  closeFd(running.input);
}

// The child has ended: what is left of its group goes too, then it is reaped and forgotten.
void reap(Running& running, CapturedRun& run, int guardFd) {
  run.end = peekChildEnd(running.pidfd);
  kill(-running.pid, SIGKILL);  // its leader unreaped, the group id is still its own
  reapChild(running.pid, running.pidfd);
  if (guardFd >= 0) writeGuardRecord(guardFd, -running.pid);
  closeFd(running.pidfd);
}

bool active(const Running& running) {
  return running.pidfd >= 0 || running.output >= 0 || running.error >= 0 || running.input >= 0;
}

// At the deadline: every child still running is killed (its group); their pipes get a
// moment to drain.
void killLate(std::vector<Running>& running, std::vector<CapturedRun>& runs) {
  for (size_t index = 0; index < running.size(); ++index) {
    if (running[index].pidfd < 0) continue;
    kill(-running[index].pid, SIGKILL);
    runs[index].timedOut = true;
  }
}

// One poll over every open descriptor, then the reads, writes and ends it reports.
void pollOnce(std::vector<Running>& running, std::vector<CapturedRun>& runs,
              const std::vector<CapturedCommand>& commands, int waitMs, int guardFd) {
  std::vector<pollfd> fds;
  std::vector<size_t> owners;
  for (size_t index = 0; index < running.size(); ++index) {
    const Running& each = running[index];
    for (int fd : {each.pidfd, each.output, each.error}) {
      if (fd < 0) continue;
      fds.push_back({fd, POLLIN, 0});
      owners.push_back(index);
    }
    if (each.input < 0) continue;
    fds.push_back({each.input, POLLOUT, 0});
    owners.push_back(index);
  }
  if (poll(fds.data(), fds.size(), waitMs) <= 0) return;
  for (size_t at = 0; at < fds.size(); ++at) {
    if (fds[at].revents == 0) continue;
    Running& each = running[owners[at]];
    CapturedRun& run = runs[owners[at]];
    if (fds[at].fd == each.output) readAvailable(each.output, run.out);
    if (fds[at].fd == each.error) readAvailable(each.error, run.err);
    if (fds[at].fd == each.input) writeAvailable(each, commands[owners[at]].standardInput);
    if (fds[at].fd == each.pidfd && peekChildEnd(each.pidfd)) reap(each, run, guardFd);
  }
}

}  // namespace

std::vector<CapturedRun> runCapturedCommands(const std::vector<CapturedCommand>& commands,
                                             std::chrono::milliseconds timeout, int guardFd) {
  std::vector<CapturedRun> runs(commands.size());
  std::vector<Running> running;
  for (size_t index = 0; index < commands.size(); ++index) {
    running.push_back(startCommand(commands[index], guardFd, runs[index]));
  }
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + timeout;
  bool killed = false;
  for (;;) {
    bool any = false;
    for (const Running& each : running) any = any || active(each);
    if (!any) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 && killed) break;  // a descendant holds a pipe open: it is not waited for
    if (left.count() <= 0) {
      killLate(running, runs);
      killed = true;
      deadline = Clock::now() + kDrainAfterKill;
      continue;
    }
    pollOnce(running, runs, commands, static_cast<int>(std::min<long long>(left.count(), 1000)), guardFd);
  }
  for (size_t index = 0; index < running.size(); ++index) {
    Running& each = running[index];
    if (each.pidfd >= 0) reap(each, runs[index], guardFd);
    for (int* fd : {&each.input, &each.output, &each.error}) closeFd(*fd);
  }
  return runs;
}

}  // namespace pltrun
