#pragma once
// One running worker: started in its own process group and tied to the launcher's life, so
// signals reach its whole process tree and nothing it starts can outlive pltrun. It is
// started by child_spawn (clone, vfork-style, with a pidfd from birth) and waited for
// through that pidfd.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <functional>
#include <memory>

#include "launcher/process/child_spawn.h"
#include "launcher/process/process_seam.h"

namespace pltrun {

/// The real StartedProcess.
class WorkerProcess final : public StartedProcess {
 public:
  using Launch = ProcessLaunch;
  /// What makes the child from its prepared setup: spawnChild, or a zygote's fork
  /// (zygote_starter.h). Either way the child is pltrun's own, its pidfd open.
  using Spawn = std::function<SpawnedChild(const ChildSetup&, SpawnFailure&)>;

  /// Starts the process with stdin on /dev/null (or a pipe holding `standardInput`) and
  /// stdout/stderr on new pipes whose read ends are `stdoutPipe` and `stderrPipe`. Throws
  /// Error(System) if it cannot be started.
  WorkerProcess(boost::asio::io_context& context, const Launch& launch, boost::asio::readable_pipe& stdoutPipe,
                boost::asio::readable_pipe& stderrPipe, const Spawn& spawn = spawnChild);
  ~WorkerProcess() override;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t groupId() const override { return groupId_; }

  /// Calls `onEnd` once, from the event loop, when the process has ended (pidfd readiness,
  /// not polling). The ended process is not reaped: see reap().
  void asyncWaitForEnd(std::function<void(ProcessEnd)> onEnd) override;

  /// Sends `signal` to the worker's whole process group (the worker and what it started).
  void signalGroup(int signal) override;

  void reap() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  pid_t groupId_ = -1;  ///< the worker's pid and process group
  bool reaped_ = false;
};

/// The real ProcessStarter: every process it starts is a WorkerProcess.
class WorkerProcessStarter final : public ProcessStarter {
 public:
  std::unique_ptr<StartedProcess> start(boost::asio::io_context& context, const ProcessLaunch& launch,
                                        boost::asio::readable_pipe& stdoutPipe,
                                        boost::asio::readable_pipe& stderrPipe) override;
};

}  // namespace pltrun
