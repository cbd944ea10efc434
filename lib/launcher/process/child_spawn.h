#pragma once
// Starting one child the way posix_spawn does (clone with CLONE_VM | CLONE_VFORK: no copy
// of the launcher's page tables, the parent resumes once the child has exec'd), with the
// steps a supervised worker needs before exec that posix_spawn cannot take: the orphan
// guard's registration, the job's cgroup, the parent-death signal, the user's open-file
// limit. The child's pidfd comes from the kernel with the child itself (CLONE_PIDFD), so
// there is no moment when the launcher holds only a pid that could be reused.

#include <sched.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <optional>
#include <string>
#include <vector>

#include "launcher/process/process_end.h"

#ifndef P_PIDFD
#define P_PIDFD 3  // linux/wait.h; glibc 2.36's sys/wait.h does not name it
#endif

namespace pltrun {

/// Everything the child needs, prepared by the parent: the child shares the parent's
/// memory until exec and may not allocate, so nothing is built on its side.
struct ChildSetup {
  const char* executable = nullptr;  ///< a path, not searched in PATH
  char* const* argv = nullptr;       ///< null-terminated, argv[0] included
  char* const* envp = nullptr;       ///< null-terminated "KEY=VALUE" entries
  int standardInput = -1;            ///< becomes fd 0
  int standardOutput = -1;           ///< becomes fd 1
  int standardError = -1;            ///< becomes fd 2
  int guardFd = -1;                  ///< the orphan guard's pipe: the child registers its group; -1: none
  int cgroupProcsFd = -1;            ///< the job cgroup's cgroup.procs: the child moves itself in; -1: none
  rlim_t openFileLimit = 0;          ///< soft RLIMIT_NOFILE for the child; 0: leave it
  const cpu_set_t* cpus = nullptr;   ///< the child's CPU affinity (--numa-binding); null: inherited
};

/// A started child: it leads a new process group (its pid) and dies with the launcher.
struct SpawnedChild {
  pid_t pid = -1;
  int pidfd = -1;  ///< close-on-exec; the caller owns it
};

/// What spawnChild reports when the child did not reach its program.
struct SpawnFailure {
  int error = 0;                 ///< errno of the step that failed
  const char* step = "";         ///< "execve", "setpgid", ... (for the message)
  bool childWasCreated = false;  ///< the child existed (and has been reaped) before it failed
  pid_t childPid = -1;           ///< its pid, when childWasCreated: the guard must forget it
};

/// Starts the child; on success returns it, otherwise fills `failure` and returns pid -1
/// with nothing left behind (a child that failed before exec is reaped here).
SpawnedChild spawnChild(const ChildSetup& setup, SpawnFailure& failure);

/// The soft open-file limit pltrun was started with (before the store raised its own): the
/// limit its children get back.
rlim_t openFileLimitAtStart();

/// The null-terminated char* array execve takes, pointing into `strings` (which must
/// outlive it): ChildSetup's argv and envp.
std::vector<char*> nullTerminated(const std::vector<std::string>& strings);

/// How child `pidfd` refers to ended, read without reaping it; nullopt while it runs. A
/// status that cannot be read (someone else reaped it) is exit code 255, never success.
std::optional<ProcessEnd> peekChildEnd(int pidfd);

/// Waits for child `pid` (`pidfd` refers to it) to end, and reaps it (the pidfd stays
/// open). spawnChild claims the children it starts as pltrun's own (descendant_sweep.h);
/// this releases them.
void reapChild(pid_t pid, int pidfd);

}  // namespace pltrun
