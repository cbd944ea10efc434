#pragma once
// One attempt of the local worker group: starts every worker, watches them through the
// event loop, stops the rest at the first failure or on a stop signal (SIGTERM-style
// signal, a grace period, then SIGKILL), and drains their output to the last byte.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/group/failure_report.h"
#include "launcher/output/output_stream.h"
#include "launcher/process/orphan_guard.h"
#include "launcher/process/process_runtime.h"
#include "launcher/process/worker_process.h"
#include "launcher/stall/stall_monitor.h"
#include "launcher/stall/stall_report.h"

namespace pltrun {

class StackSampling;

/// Everything needed to start one worker of one attempt.
struct WorkerSpec {
  int rank = 0;
  int localRank = 0;
  WorkerProcess::Launch launch;
  std::string consolePrefix;  ///< e.g. "[rank 3] ", or empty
  OutputRoute stdoutRoute;
  OutputRoute stderrRoute;
  RunFile errorFile;          ///< TORCHELASTIC_ERROR_FILE, read through the run directory
  std::string label;          ///< in pltrun's messages, e.g. "host h2"; empty: "rank N"
  std::string heartbeatPath;  ///< PLTRUN_HEARTBEAT, bound before it starts; empty: none
  std::string stackFile;      ///< PLTRUN_STACK_FILE; empty: no Python stack dumps
};

/// Why a group has a root cause, for the observers: "ended with exit code 3", "stalled: ...".
struct RootCauseNotice {
  std::string what;
  int status = 1;  ///< the shell status the job ends with if it is not restarted
  /// The root cause as known at once: its rank, pid, end (none yet for a stalled worker: it
  /// is being stopped), stall and expired FileTimer; no error file or stderr read yet. Enough
  /// for restartCauseOf (metrics/restart_cause.h), which an elastic agent writes in the
  /// round's end.
  WorkerFailure failure;
};

struct GroupSettings {
  int attempt = 0;
  std::chrono::milliseconds termTimeout{30000};
  std::string host;
  /// Optional observers (the elastic agent's event log).
  std::function<void(const WorkerSpec&, pid_t)> onWorkerStarted;
  /// `stopped`: it ended by a stop signal pltrun sent it (endedByStopSignal), not on its own.
  std::function<void(const WorkerSpec&, pid_t, const ProcessEnd&, bool stopped)> onWorkerExited;
  /// Each heartbeat read (--metrics): when, and its counter when the payload was one. Null
  /// (the default) costs a heartbeat nothing more.
  std::function<void(const WorkerSpec&, std::chrono::steady_clock::time_point, std::optional<long long>)> onHeartbeat;
  /// After the first failure, how long the others may go on before they are stopped (the
  /// driver's agents end by themselves once their job has failed, and finish their reports).
  std::chrono::milliseconds stopDelayAfterFailure{0};
  /// The first failure (the root cause), before the other workers are stopped.
  std::function<void(const WorkerSpec&, pid_t, const RootCauseNotice&)> onRootCause;
  /// --stall-timeout: workers silent for longer (after a first heartbeat) are stalled.
  std::optional<StallTimeout> stallTimeout;
  /// The real-time signal pltrun's Python hook dumps stacks on (stack_sampler.h).
  int stackSignal = 0;
  /// A stall was found and diagnosed, before any worker is stopped (the event log).
  std::function<void(const StallReport&)> onStall;
  /// Elastic jobs: when every stalled worker here waits in a collective (the culprit is on
  /// another node), how long this node leaves the others to name it before it ends the round.
  std::chrono::milliseconds unexplainedStallGrace{0};
  /// Elastic jobs: the other nodes' ranks as their agents last published them, so that the
  /// verdict compares every rank's counter (stall_verdict.h).
  std::function<std::vector<RankEvidence>()> otherNodesProgress;
};

struct GroupOutcome {
  enum class Kind { Succeeded, Failed, Interrupted };
  Kind kind = Kind::Succeeded;
  int interruptSignal = 0;                 ///< for Interrupted
  std::optional<WorkerFailure> rootCause;  ///< for Failed; also for Interrupted after a failure
  /// Other workers that failed on their own: not those that ended by a stop signal they were
  /// sent (endedByStopSignal).
  std::vector<WorkerFailure> others;
};

class WorkerGroup {
 public:
  /// After every worker has ended, how long their pipes may stay open. Only a descendant
  /// that left its process group (setsid) can hold one open past the final SIGKILL sweep.
  static constexpr std::chrono::milliseconds kDrainTimeout{2000};

  /// `runtime`: what starts the workers and times the deadlines (real processes and clock;
  /// fakes in unit tests).
  WorkerGroup(boost::asio::io_context& context, ConsoleWriter& console, OrphanGuard& guard, GroupSettings settings,
              ProcessRuntime runtime = realProcessRuntime());
  ~WorkerGroup();

  /// Starts every worker; `onDone` runs once all have ended and their output is drained.
  void start(const std::vector<WorkerSpec>& specs, std::function<void()> onDone);

  /// A signal the launcher received: SIGUSR1/SIGUSR2 are forwarded; a stop signal is
  /// forwarded, then SIGKILL follows after the grace period, or at once if repeated.
  /// `workersHaveIt`: the sender (Slurm) delivered it to the workers too; it is not sent
  /// again, and a stop signal only starts the grace period.
  void handleSignal(int signal, bool workersHaveIt = false);

  /// Stops the workers that still run (SIGTERM, the grace period, SIGKILL) because the job
  /// re-forms elsewhere: neither a failure nor an interruption of this group.
  void stop();

  /// Kills the workers that still run, at once (SIGKILL, no grace period): this node has
  /// lost the rendezvous store, and the other nodes may start the job's next generation
  /// any moment, which must never run beside this one.
  void kill();

  GroupOutcome outcome() const;

  /// The worker `pid` belongs to (the worker, a process of its group, or a descendant of
  /// it): its rank, or none for a process that is not the job's.
  std::optional<int> rankOfProcess(pid_t pid) const;
  /// torch's FileTimer killed `pid` of rank `rank` (file_timer_server.h): its failure report says so.
  void noteExpiredTimer(int rank, const std::string& what);
  /// Heartbeats of this attempt's workers so far (for `pltrun status`).
  std::vector<RankEvidence> progress() const;

 private:
  struct Worker;

  void onWorkerEnd(Worker& worker, ProcessEnd end);
  void onStall(const std::vector<size_t>& stalled);
  void reportStall(const std::vector<size_t>& stalled, const std::vector<size_t>& sampled,
                   const std::vector<StackSample>& stacks);
  bool canReportStall() const;
  void stopForStall(const StallReport& report, size_t firstStalled);
  StallReport diagnoseStall(const std::vector<size_t>& stalled, const std::vector<size_t>& sampled,
                            const std::vector<StackSample>& stacks);
  void becomeRootCause(Worker& worker, RootCauseNotice notice);
  void stopRunningWorkers(int signal);  ///< signal 0: none is sent, the grace period starts
  void killRunningWorkers();
  void signalRunningWorkers(int signal);
  void noteStopSignal(int signal);
  void afterAllEnded();
  void retire(Worker& worker);
  void onStreamEnd();
  void finish();
  WorkerFailure describeFailure(const Worker& worker) const;

  boost::asio::io_context& context_;
  ConsoleWriter& console_;
  OrphanGuard& guard_;
  GroupSettings settings_;
  ProcessRuntime runtime_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Timer> killTimer_;
  std::unique_ptr<Timer> drainTimer_;
  std::unique_ptr<Timer> failureTimer_;
  std::unique_ptr<Timer> stallGraceTimer_;
  std::function<void()> onDone_;
  size_t running_ = 0;
  size_t openStreams_ = 0;
  bool stopping_ = false;
  bool finished_ = false;
  int interruptSignal_ = 0;
  Worker* rootCause_ = nullptr;
  std::unique_ptr<StallMonitor> monitor_;
  std::optional<StallReport> stallReport_;        ///< when the root cause is a stall
  std::unique_ptr<StackSampling> stackSampling_;  ///< the stall's stacks, being read
};

}  // namespace pltrun
