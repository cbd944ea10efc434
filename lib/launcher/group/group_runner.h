#pragma once
// The event loop that every launcher mode runs its worker group on (the single-node
// supervisor, the multi-host driver, the elastic agent): the signals pltrun receives go to
// the group that runs, one handler at a time until the group has ended and its output is
// drained, then what was queued meanwhile runs while the group still exists.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <vector>

#include "launcher/group/worker_group.h"
#include "launcher/output/console_writer.h"
#include "launcher/process/signal_receiver.h"

namespace pltrun {

class GroupRunner {
 public:
  /// Runs on `context`, which may also serve other things (the agent store, a watcher's
  /// posts); nothing is listened to before listen().
  explicit GroupRunner(boost::asio::io_context& context);

  /// From now on, forwardedSignals() are caught: `observer` (if any) sees each first (the
  /// elastic agent announces a stop to the other nodes), then the running group gets it.
  /// Also from now on, every second, descendants reparented here that have ended are reaped
  /// (descendant_sweep.h).
  /// `slurmReachesWorkers`: a signal from Slurm's slurmstepd has been delivered to the
  /// workers by Slurm itself (slurm_signals.h), so the group only acts on it.
  void listen(std::function<void(int)> observer = {}, bool slurmReachesWorkers = false);
  /// Catches forwardedSignals() already, before listen(), so that a blocking wait (the
  /// rendezvous store's connect) can end on a stop signal: see pendingStopSignal().
  void catchSignals();
  /// A stop signal caught since catchSignals() and not yet handled (others are dropped:
  /// before listen() there is no worker to pass them to).
  std::optional<int> pendingStopSignal();

  /// Where every group of this run writes its workers' lines.
  ConsoleWriter& console() { return console_; }

  /// Starts `group` with `specs`; it receives the signals until waitForGroup() returns.
  void start(WorkerGroup& group, const std::vector<WorkerSpec>& specs);
  /// Runs the loop until the started group has ended (every worker, every byte of output),
  /// then stops passing it signals and returns its outcome.
  GroupOutcome waitForGroup();
  /// One group from start to end: start(), run until it has ended, runPending() while it
  /// still gets signals, then its outcome.
  GroupOutcome run(WorkerGroup& group, const std::vector<WorkerSpec>& specs);

  /// Runs the loop one handler at a time until `done()`.
  void runUntil(const std::function<bool()>& done);
  /// Runs the handlers that are ready now (an expired timer, a signal, a post), no more.
  void runPending();

 private:
  void waitForSignal();
  bool catching_ = false;
  void reapAdoptedEverySecond();

  boost::asio::io_context& context_;
  SignalReceiver signals_;
  boost::asio::steady_timer reapTimer_;
  bool slurmReachesWorkers_ = false;
  pid_t parentPid_ = 0;  ///< at listen(): under srun, the step's slurmstepd
  std::function<void(int)> observer_;
  ConsoleWriter& console_ = launcherConsole();
  WorkerGroup* current_ = nullptr;
  bool groupDone_ = true;
};

/// Whether `signal`, forwarded to workers, also stops them: every forwarded signal but
/// SIGUSR1 and SIGUSR2, which workers handle and go on (a checkpoint request).
bool isStopSignal(int signal);

/// The signals forwarded to workers: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
/// less those the launcher was started with ignored (nohup's SIGHUP stays ignored).
std::vector<int> forwardedSignals();

}  // namespace pltrun
