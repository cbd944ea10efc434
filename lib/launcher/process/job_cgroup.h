#pragma once
// The job's own cgroup (v2), where this process may make one: each worker moves itself in
// before exec, so everything it ever starts is in it too, whatever session, process group
// or parent it takes; cgroup.kill then ends them all at once, by membership, not by a pid
// or group id that could have been reused. Where none can be made (no cgroup v2, a cgroup
// that is not ours to divide, PLTRUN_CGROUP=off), pltrun relies on process groups, the
// subreaper sweep and the orphan guard alone.

#include <memory>
#include <string>

namespace pltrun {

class JobCgroup {
 public:
  /// Makes "pltrun-PID-N" under this process's own cgroup; nullptr (the reason logged at
  /// debug level) where that is not possible or PLTRUN_CGROUP=off.
  static std::unique_ptr<JobCgroup> create();
  /// Kills what is left in the cgroup and removes it.
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  const std::string& path() const { return path_; }
  /// cgroup.procs, open for writing (close-on-exec): a child writes "0" to move itself in.
  int procsFd() const { return procsFd_; }
  /// cgroup.kill, open for writing (close-on-exec).
  int killFd() const { return killFd_; }
  /// SIGKILL to every process in the cgroup (cgroup.kill).
  void killAll() const;

 private:
  JobCgroup(std::string path, int procsFd, int killFd) : path_(std::move(path)), procsFd_(procsFd), killFd_(killFd) {}

  std::string path_;
  int procsFd_;
  int killFd_;
};

/// Writes "1" to cgroup.kill `killFd`; async-signal-safe (the orphan guard calls it).
void killCgroup(int killFd);

/// Removes the cgroup directory `path` (and any cgroup left inside it) once the processes
/// killed in it have exited, trying for up to `attempts` x 10 ms; true if it is gone.
bool removeCgroupWhenEmpty(const char* path, int attempts);

}  // namespace pltrun
