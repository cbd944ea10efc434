#pragma once
// The seam between a worker group and the processes it runs. The group only starts a
// process, waits for its end and signals its process group; behind these two interfaces
// the launcher runs real children (WorkerProcess, started with clone) and the unit tests run
// fakes they end, and watch being signalled, by hand, so the group's stop, grace period
// and root cause are tested without forking anything.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/process/process_end.h"

namespace pltrun {

/// What to start: the program, its arguments, its environment and its standard input.
struct ProcessLaunch {
  std::string executable;
  std::vector<std::string> argv;         ///< argv[0] included, as the program sees it
  std::vector<std::string> environment;  ///< "KEY=VALUE" entries
  /// What the process reads on stdin, then end of file (a secret handed to a remote
  /// agent without putting it in argv); empty: stdin is /dev/null. At most 64 KiB.
  std::optional<std::string> standardInput;
  /// The orphan guard's pipe (-1: none): the child registers its own process group there
  /// before exec, so there is no moment when it runs and `kill -9 pltrun` would miss it.
  int guardFd = -1;
  /// The job cgroup's cgroup.procs (-1: none): the child moves itself in before exec, so
  /// the cgroup holds everything it ever starts, whatever session or group they take.
  int cgroupProcsFd = -1;
  /// The CPUs the process may run on (--numa-binding), set before exec; empty: pltrun's own.
  std::vector<int> cpus;
};

/// A process that was started, in its own process group.
class StartedProcess {
 public:
  virtual ~StartedProcess() = default;

  /// The process group the process leads; it outlives the leader while its children run.
  virtual pid_t groupId() const = 0;
  /// Calls `onEnd` once, from the event loop, when the process has ended.
  virtual void asyncWaitForEnd(std::function<void(ProcessEnd)> onEnd) = 0;
  /// Sends `signal` to the process's whole group (the process and what it started).
  virtual void signalGroup(int signal) = 0;
  /// Reaps the ended process (waiting for its end if need be). Until then the ended leader
  /// stays a zombie, so its group id cannot be handed to another process and
  /// signalGroup() never reaches a stranger: the group kills what is left in the group and
  /// has the orphan guard forget it first.
  virtual void reap() = 0;
};

/// Starts processes whose stdout and stderr are the write ends of `stdoutPipe` and
/// `stderrPipe`, read ends not yet open.
class ProcessStarter {
 public:
  virtual ~ProcessStarter() = default;

  /// Throws Error(System) if the process cannot be started.
  virtual std::unique_ptr<StartedProcess> start(boost::asio::io_context& context, const ProcessLaunch& launch,
                                                boost::asio::readable_pipe& stdoutPipe,
                                                boost::asio::readable_pipe& stderrPipe) = 0;
};

}  // namespace pltrun
