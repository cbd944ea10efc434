#pragma once
// One running worker: started in its own process group and tied to the launcher's life, so
// signals reach its whole process tree and nothing it starts can outlive pltrun.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pltrun {

/// How a process ended: an exit code, or the signal that killed it.
struct ProcessEnd {
  int exitCode = 0;  ///< meaningful when signal == 0
  int signal = 0;    ///< non-zero when killed by a signal

  bool succeeded() const { return signal == 0 && exitCode == 0; }
  /// The shell's convention: the exit code, or 128 + the signal.
  int shellStatus() const { return signal != 0 ? 128 + signal : exitCode; }
  /// "exit code 3" or "signal SIGKILL (9)".
  std::string describe() const;
};

/// The name of a signal, like "SIGTERM"; "signal N" for unknown numbers.
std::string signalName(int signal);

class WorkerProcess {
 public:
  struct Launch {
    std::string executable;
    std::vector<std::string> argv;         ///< argv[0] included (Boost.Process passes `executable` as argv[0])
    std::vector<std::string> environment;  ///< "KEY=VALUE" entries
    /// What the process reads on stdin, then end of file (a secret handed to a remote
    /// agent without putting it in argv); empty: stdin is /dev/null. At most 64 KiB.
    std::optional<std::string> standardInput;
  };

  /// Starts the process with stdin on /dev/null (or a pipe holding `standardInput`) and
  /// stdout/stderr on new pipes whose read ends are `stdoutPipe` and `stderrPipe`. Throws
  /// Error(System) if it cannot be started.
  WorkerProcess(boost::asio::io_context& context, const Launch& launch, boost::asio::readable_pipe& stdoutPipe,
                boost::asio::readable_pipe& stderrPipe);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t groupId() const { return groupId_; }

  /// Calls `onEnd` once, from the event loop, when the process has ended (pidfd readiness,
  /// not polling).
  void asyncWaitForEnd(std::function<void(ProcessEnd)> onEnd);

  /// Sends `signal` to the worker's whole process group (the worker and what it started).
  void signalGroup(int signal) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  pid_t pid_ = -1;      ///< -1 once reaped
  pid_t groupId_ = -1;  ///< the worker's process group; outlives the leader's exit
};

}  // namespace pltrun
