#include "launcher/process/child_spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "launcher/process/descendant_sweep.h"
#include "launcher/process/descriptor_slots.h"
#include "launcher/process/orphan_guard.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)  // linux/close_range.h, Linux 5.9
#endif
#ifndef __NR_close_range
#define __NR_close_range 436  // the same on every architecture (Linux 5.9)
#endif

namespace pltrun {
namespace {

// The child runs on a stack of its own in the parent's memory until exec; these frames
// are small (no allocation, no stdio), so 128 KiB is ample.
constexpr size_t kChildStackSize = 128 * 1024;

// The system call, not glibc's close_range(), which glibc has only since 2.34: the wheel
// links glibc 2.31 (docs/PACKAGING.md), and whether it works is the kernel's to say.
int closeRange(unsigned first, unsigned last, unsigned flags) {
  return static_cast<int>(syscall(__NR_close_range, first, last, flags));
}

// What the child reads and, if a step fails, writes back before it exits: the parent
// reads it once clone returns, which with CLONE_VFORK is after the child exec'd or exited.
struct ChildContext {
  const ChildSetup* setup;
  pid_t launcherPid;
  bool failed;
  int error;
  const char* step;
  /// Started sharing the launcher's descriptor table (descriptor_slots.h): the child keeps
  /// a copy of the descriptors below this, first thing. 0: the table was copied by clone.
  int sharedTableEnd;
};

[[noreturn]] void failChild(ChildContext& context, const char* step) {
  context.failed = true;
  context.error = errno;
  context.step = step;
  _exit(127);
}

// The launcher's signal handlers must never run in the child: it shares the launcher's
// memory until exec. Handled signals go back to their default (exec would do that too);
// ignored ones stay ignored, as they would across exec.
void resetSignalHandlers() {
  for (int signal = 1; signal < NSIG; ++signal) {
    struct sigaction current {};
    if (sigaction(signal, nullptr, &current) != 0) continue;  // glibc's internal signals
    if (current.sa_handler == SIG_IGN || current.sa_handler == SIG_DFL) continue;
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigaction(signal, &fallback, nullptr);
  }
}

// fds 0, 1 and 2 from the prepared descriptors. Each is first copied above 2, so a source
// that is itself 0, 1 or 2 (pltrun started with a standard stream closed) is not
// overwritten before it is used.
bool installStandardStreams(const ChildSetup& setup) {
  const int sources[3] = {setup.standardInput, setup.standardOutput, setup.standardError};
  int copies[3];
  for (int index = 0; index < 3; ++index) {
    copies[index] = fcntl(sources[index], F_DUPFD_CLOEXEC, 3);
    if (copies[index] < 0) return false;
  }
  for (int index = 0; index < 3; ++index) {
    if (dup2(copies[index], index) < 0) return false;  // dup2 clears close-on-exec
  }
  return true;
}

// Nothing else of the launcher's: its own descriptors are close-on-exec, and this also
// closes what pltrun inherited from whoever started it (as Popen(close_fds=True) does).
void closeInheritedDescriptors() {
  if (closeRange(3, ~0U, 0) == 0) return;
  // Linux before 5.9 has no close_range: close one by one, up to the open-file limit.
  rlimit limit{};
  const rlim_t last = getrlimit(RLIMIT_NOFILE, &limit) == 0 ? std::min<rlim_t>(limit.rlim_cur, 1 << 16) : 1024;
  for (rlim_t fd = 3; fd < last; ++fd) close(static_cast<int>(fd));
}

int childMain(void* argument) {
  auto& context = *static_cast<ChildContext*>(argument);
  const ChildSetup& setup = *context.setup;
  // Before any descriptor is touched: from here on the table is the child's own.
  if (context.sharedTableEnd > 0 && closeRange(context.sharedTableEnd, ~0U, CLOSE_RANGE_UNSHARE) != 0) {
    failChild(context, "close_range");
  }
  resetSignalHandlers();
  // Its own process group: the launcher signals the worker and its children as one, and
  // the terminal's Ctrl-C reaches only the launcher, which decides what to forward.
  if (setpgid(0, 0) != 0) failChild(context, "setpgid");
  // In the job's cgroup before exec, so everything it ever starts is in it too.
  if (setup.cgroupProcsFd >= 0 && write(setup.cgroupProcsFd, "0", 1) != 1) failChild(context, "cgroup.procs");
  // Watched by the orphan guard from before exec: were the launcher killed right after
  // this clone, before it could register the group itself, the group would be missed.
  if (setup.guardFd >= 0) writeGuardRecord(setup.guardFd, getpid());
  // Killed if the launcher dies, even by SIGKILL; the check closes the race where the
  // launcher died before prctl took effect.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) failChild(context, "prctl");
  if (getppid() != context.launcherPid) _exit(128 + SIGKILL);
  // Its CPUs (--numa-binding) before exec: the program and every thread it starts run there.
  if (setup.cpus != nullptr && sched_setaffinity(0, sizeof(cpu_set_t), setup.cpus) != 0) {
    failChild(context, "sched_setaffinity");
  }
  if (!installStandardStreams(setup)) failChild(context, "dup2");
  closeInheritedDescriptors();
  // pltrun raised its own open-file limit for the store; the worker gets the user's. Only
  // now: with the lower limit, the copies above 2 could fail in a launcher that holds
  // more descriptors than the user's limit allows.
  rlimit limit{};
  if (setup.openFileLimit != 0 && getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    limit.rlim_cur = std::min(setup.openFileLimit, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  // The launcher blocks SIGPIPE and the signals it waits for; the worker starts clean.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(setup.executable, setup.argv, setup.envp);
  failChild(context, "execve");
}

// The soft open-file limit pltrun was started with, read before main() (so before the
// store raises it to the hard limit): the workers get the user's limit back.
rlim_t softOpenFileLimit() {
  rlimit limit{};
  return getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_cur : 0;
}
const rlim_t kOpenFileLimitAtStart = softOpenFileLimit();

}  // namespace

rlim_t openFileLimitAtStart() { return kOpenFileLimitAtStart; }

namespace {

void waitForEndAndReap(int pidfd) {
  siginfo_t info{};
  while (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED) != 0) {
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return;
    // A non-blocking pidfd (the event loop made it so) of a child still running: wait
    // until it ends, then reap.
    pollfd ready{pidfd, POLLIN, 0};
    poll(&ready, 1, -1);
  }
}

}  // namespace

void reapChild(pid_t pid, int pidfd) {
  waitForEndAndReap(pidfd);
  releaseOwnChild(pid);
}

namespace {

SpawnedChild cloneChild(const ChildSetup& setup, SpawnFailure& failure, int sharedTableEnd) {
  void* stack = mmap(nullptr, kChildStackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    failure = SpawnFailure{errno, "mmap", false, -1};
    return {};
  }
  ChildContext context{&setup, getpid(), false, 0, "", sharedTableEnd};
  // Every signal blocked across clone: a handler must not run in the child before it has
  // reset them (it unblocks just before exec).
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  int pidfd = -1;
  const int shareTable = sharedTableEnd > 0 ? CLONE_FILES : 0;
  const pid_t pid = clone(childMain, static_cast<char*>(stack) + kChildStackSize,
                          CLONE_VM | CLONE_VFORK | CLONE_PIDFD | shareTable | SIGCHLD, &context, &pidfd);
  const int cloneError = errno;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  munmap(stack, kChildStackSize);
  if (pid < 0) {
    failure = SpawnFailure{cloneError, "clone", false, -1};
    return {};
  }
  if (context.failed) {
    waitForEndAndReap(pidfd);
    close(pidfd);
    failure = SpawnFailure{context.error, context.step, true, pid};
    return {};
  }
  if (pidfd < 0) {
    // A kernel older than 5.2 ignores CLONE_PIDFD: the program runs, but cannot be waited
    // for the way pltrun does (pidfd waits need 5.4). End it and say so.
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    failure = SpawnFailure{ENOSYS, "CLONE_PIDFD: pltrun needs Linux 5.4 or later", true, pid};
    return {};
  }
  claimOwnChild(pid);
  return SpawnedChild{pid, pidfd};
}

// The child started sharing the table, its few descriptors routed through the slots.
// False (nothing started) when the slots cannot be used: copy the table instead.
bool spawnThroughSlots(const ChildSetup& setup, SpawnFailure& failure, SpawnedChild& child) {
  const DescriptorSlots::Lease lease = DescriptorSlots::lease();
  ChildSetup routed = setup;
  int* fields[DescriptorSlots::kCount] = {&routed.standardInput, &routed.standardOutput, &routed.standardError,
                                          &routed.guardFd, &routed.cgroupProcsFd};
  bool routedAll = true;
  for (int index = 0; index < DescriptorSlots::kCount; ++index) {
    const int source = *fields[index];
    *fields[index] = DescriptorSlots::route(lease, index, source);
    routedAll = routedAll && (source < 0 || *fields[index] >= 0);
  }
  if (routedAll) child = cloneChild(routed, failure, lease.tableEnd);
  DescriptorSlots::release(lease);
  if (!routedAll) return false;
  if (child.pid < 0 && std::strcmp(failure.step, "close_range") == 0) {
    DescriptorSlots::disable();  // Linux before 5.9: no CLOSE_RANGE_UNSHARE
    return false;
  }
  return true;
}

}  // namespace

SpawnedChild spawnChild(const ChildSetup& setup, SpawnFailure& failure) {
  SpawnedChild child;
  if (DescriptorSlots::available() && spawnThroughSlots(setup, failure, child)) return child;
  failure = SpawnFailure{};
  return cloneChild(setup, failure, 0);
}

std::vector<char*> nullTerminated(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const std::string& text : strings) pointers.push_back(const_cast<char*>(text.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

std::optional<ProcessEnd> peekChildEnd(int pidfd) {
  siginfo_t info{};
  if (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    // The status is lost (someone else reaped the worker): never report that as success.
    return ProcessEnd{255, 0};
  }
  if (info.si_pid == 0) return std::nullopt;
  // "killed by signal 3" must not read as "exit code 3".
  if (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) return ProcessEnd{0, info.si_status};
  return ProcessEnd{info.si_status, 0};
}

}  // namespace pltrun
