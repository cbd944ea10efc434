#include "launcher/stall/eu_stack_run.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/process/child_spawn.h"
#include "launcher/process/descendant_sweep.h"
#include "launcher/stall/stack_sample.h"

extern char** environ;

namespace pltrun {
namespace {

// The child of `posix_spawnp`: stdout to `output`, stderr to /dev/null.
pid_t spawnEuStack(pid_t target, int output) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, output, 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  const std::string pidText = std::to_string(target);
  char* argv[] = {const_cast<char*>("eu-stack"), const_cast<char*>("-p"), const_cast<char*>(pidText.c_str()), nullptr};
  pid_t child = 0;
  const int failed = posix_spawnp(&child, "eu-stack", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  return failed == 0 ? child : -1;
}

}  // namespace

std::unique_ptr<EuStackRun> EuStackRun::start(pid_t target) {
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) return nullptr;
  const pid_t child = spawnEuStack(target, pipeFds[1]);
  close(pipeFds[1]);
  if (child < 0) {
    close(pipeFds[0]);
    return nullptr;
  }
  claimOwnChild(child);
  // Claimed: no one else reaps it now, so its pid still names it here.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child, 0));
  if (pidfd < 0) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    releaseOwnChild(child);
    close(pipeFds[0]);
    return nullptr;
  }
  fcntl(pipeFds[0], F_SETFL, O_NONBLOCK);
  return std::unique_ptr<EuStackRun>(new EuStackRun(child, pidfd, pipeFds[0]));
}

EuStackRun::~EuStackRun() {
  close(output_);
  // Done or late: either way it is killed and reaped now.
  syscall(SYS_pidfd_send_signal, pidfd_, SIGKILL, nullptr, 0);
  siginfo_t info{};
  while (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_), &info, WEXITED) != 0 && errno == EINTR) {
  }
  releaseOwnChild(pid_);
  close(pidfd_);
}

bool EuStackRun::readMore() {
  char buffer[4096];
  for (;;) {
    const ssize_t count = read(output_, buffer, sizeof buffer);
    if (count > 0) {
      text_.append(buffer, static_cast<size_t>(count));
      if (text_.size() >= kStackTextLimit) return false;
      continue;
    }
    if (count < 0 && (errno == EINTR)) continue;
    return count < 0 && errno == EAGAIN;  // 0: its output has ended
  }
}

}  // namespace pltrun
