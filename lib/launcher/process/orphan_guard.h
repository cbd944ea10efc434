#pragma once
// Makes "no worker outlives pltrun" hold even after `kill -9 pltrun`. A worker dies with
// the launcher through its parent-death signal, but its children do not; so a tiny guard
// process, forked before anything else, is told every worker process group and kills
// them all the moment the launcher's end of a pipe closes, however the launcher died.
// Where the job has a cgroup of its own (job_cgroup.h) the guard also kills the cgroup,
// which reaches what left its group and session too, and removes it. Last, it removes the
// run's temporary directories (error files, heartbeat sockets, the FileTimer FIFO), which a
// killed launcher cannot.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "launcher/process/job_cgroup.h"

namespace pltrun {

/// Writes one record on the guard's pipe `fd`: a group id to watch, or its negation to
/// forget. One 4-byte write, atomic; async-signal-safe, so a child between fork and exec
/// may call it.
void writeGuardRecord(int fd, pid_t record);

class OrphanGuard {
 public:
  /// Makes the job's cgroup where possible, then forks the guard. Call before any thread
  /// or event loop exists. The guard removes `temporaryDirectories` (made before it) once
  /// the launcher is gone, however it ended: after a normal end they are gone already.
  explicit OrphanGuard(std::vector<std::string> temporaryDirectories = {});
  /// Closes the pipe: the guard kills the groups still registered (and the cgroup) and
  /// exits; it is reaped here, then the cgroup is removed.
  ~OrphanGuard();
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

  /// From now on the guard kills this process group if the launcher dies.
  void watchGroup(pid_t groupId);
  /// Where a child writes its own group id (a pid_t, in one write) to be watched: what
  /// watchGroup() sends, but from the child before exec, so no window is left open.
  int registrationFd() const { return writeFd_; }
  /// The group is gone (its members were killed and reaped); forget it so its id, once
  /// reused by the system, is never signalled.
  void forgetGroup(pid_t groupId);

  /// The job cgroup's cgroup.procs for a child to move itself into; -1 without a cgroup.
  int cgroupProcsFd() const { return cgroup_ ? cgroup_->procsFd() : -1; }
  /// Kills everything left in the job's cgroup (nothing without one). Call when every
  /// worker of an attempt has ended: what is left escaped their process groups.
  void killStragglers() const {
    if (cgroup_) cgroup_->killAll();
  }

 private:
  void send(pid_t record);

  std::unique_ptr<JobCgroup> cgroup_;  ///< destroyed after the guard is reaped
  pid_t guardPid_ = -1;
  int writeFd_ = -1;
};

}  // namespace pltrun
