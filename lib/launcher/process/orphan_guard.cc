#include "launcher/process/orphan_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "launcher/process/descendant_sweep.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// The guard's whole life: read records (a positive group id to watch, a negative one to
// forget) until end of file, then kill what is still watched and the job's cgroup
// (cgroupKillFd -1: none), and remove the cgroup and the temporary directories. It never
// returns.
[[noreturn]] void runGuard(int readFd, int cgroupKillFd, const char* cgroupPath,
                           const std::vector<std::string>& temporaryDirectories) {
  prctl(PR_SET_NAME, "pltrun-guard");
  // Its own process group: `kill -9 -PGID` of the launcher's group (a shell's kill %1)
  // must not take the guard down with the launcher.
  setpgid(0, 0);
  // Hold no terminal or pipe of the launcher's open: whoever reads pltrun's output sees
  // end of file when pltrun exits, not when the guard does.
  int devNull = open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) dup2(devNull, fd);
  if (devNull > 2) close(devNull);
  // Ctrl-C and kill(-launcher_group) must not take the guard down before its work is done.
  for (int signal = 1; signal < NSIG; ++signal) {
    if (signal != SIGKILL && signal != SIGSTOP) ::signal(signal, SIG_IGN);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  std::set<pid_t> watched;
  pid_t record = 0;
  while (true) {
    ssize_t got = read(readFd, &record, sizeof record);
    if (got == sizeof record) {
      if (record > 0) watched.insert(record);
      if (record < 0) watched.erase(-record);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    break;  // end of file (the launcher is gone) or an error: either way, clean up
  }
  if (cgroupKillFd >= 0) killCgroup(cgroupKillFd);
  for (pid_t group : watched) kill(-group, SIGKILL);
  // The launcher removes the cgroup when it ends normally; after `kill -9 pltrun` only
  // the guard is left to do it.
  if (cgroupPath != nullptr) removeCgroupWhenEmpty(cgroupPath, 200);
  for (const std::string& directory : temporaryDirectories) {
    std::error_code ignored;  // a link found at its name is removed, never followed
    std::filesystem::remove_all(directory, ignored);
  }
  _exit(0);
}

}  // namespace

OrphanGuard::OrphanGuard(std::vector<std::string> temporaryDirectories) : cgroup_(JobCgroup::create()) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(ErrorCode::System, std::string("cannot create the orphan guard's pipe: ") + strerror(errno));
  }
  guardPid_ = fork();
  if (guardPid_ < 0) {
    throw Error(ErrorCode::System, std::string("cannot fork the orphan guard: ") + strerror(errno));
  }
  if (guardPid_ == 0) {
    close(fds[1]);
    runGuard(fds[0], cgroup_ ? cgroup_->killFd() : -1, cgroup_ ? cgroup_->path().c_str() : nullptr,
             temporaryDirectories);
  }
  claimOwnChild(guardPid_);
  close(fds[0]);
  writeFd_ = fds[1];
}

OrphanGuard::~OrphanGuard() {
  close(writeFd_);
  while (waitpid(guardPid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  releaseOwnChild(guardPid_);
}

void writeGuardRecord(int fd, pid_t record) {
  // A record is 4 bytes, far below PIPE_BUF, so each write is atomic and complete.
  while (write(fd, &record, sizeof record) < 0 && errno == EINTR) {
  }
}

void OrphanGuard::send(pid_t record) { writeGuardRecord(writeFd_, record); }

void OrphanGuard::watchGroup(pid_t groupId) { send(groupId); }
void OrphanGuard::forgetGroup(pid_t groupId) { send(-groupId); }

}  // namespace pltrun
