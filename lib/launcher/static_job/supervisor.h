#pragma once
// Runs the local worker group until it succeeds, is interrupted, or fails more often than
// --max-restarts allows, and turns the result into pltrun's exit status.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/group/file_timer_server.h"
#include "launcher/group/worker_group.h"
#include "launcher/metrics/metrics_recorder.h"
#include "launcher/output/event_log.h"
#include "launcher/plan/slurm_signals.h"
#include "launcher/process/orphan_guard.h"
#include "launcher/stall/restart_progress.h"

namespace pltrun {

struct SupervisorOptions {
  int maxRestarts = 0;
  /// --max-no-progress-restarts (restart_progress.h); 0: restarts never stop for it.
  int maxNoProgressRestarts = 0;
  std::chrono::milliseconds termTimeout{30000};
  std::string host;
  RunFile report;  ///< where the failure report's JSON goes, if anywhere
  SlurmSignalReach slurmSignalReach = SlurmSignalReach::TaskGroup;  ///< under srun: Slurm's own signals
  std::optional<StallTimeout> stallTimeout;                         ///< --stall-timeout
  int stackSignal = 0;                                              ///< pltrun's Python hook's
  RunFile eventLog;                      ///< events.jsonl (stalls, restarts, the end), if anywhere
  nlohmann::json runStarted;             ///< the first event's fields (run_events.h)
  FileTimerServer* fileTimer = nullptr;  ///< torch's FileTimer, when served
  MetricsRecorder* metrics = nullptr;    ///< --metrics: each attempt's workers and restarts
};

/// What the supervisor does once an attempt's group has ended.
struct AfterAttempt {
  enum class Action { Finish, Restart };
  Action action = Action::Finish;
  int status = 0;              ///< for Finish: pltrun's exit status
  bool reportFailure = false;  ///< for Finish: print the root cause's failure report first
};

/// Pure: success finishes with 0; an interruption with 128 + the signal (reporting a
/// failure that came first); a failure restarts while `attempt` < `maxRestarts`, and
/// otherwise finishes with the root-cause worker's own status, reported.
AfterAttempt decideAfterAttempt(const GroupOutcome& outcome, int attempt, int maxRestarts);

/// The workers of attempt N (0 for the first start, N for the N-th restart).
using AttemptPlanner = std::function<std::vector<WorkerSpec>(int attempt)>;

class Supervisor {
 public:
  /// Runs on `context`, which may also serve other things (the agent store); every
  /// attempt's group runs on `runtime` (real processes and clock; fakes in unit tests).
  Supervisor(boost::asio::io_context& context, SupervisorOptions options, OrphanGuard& guard,
             ProcessRuntime runtime = realProcessRuntime());

  /// 0 when every worker of an attempt succeeded; the root-cause worker's own status
  /// (exit code, or 128 + signal) after the last allowed attempt failed; 128 + the signal
  /// when the launcher was told to stop.
  int run(const AttemptPlanner& planAttempt);

 private:
  /// `update` on the metrics, with --metrics.
  void recordMetrics(const std::function<void(JobMetrics&)>& update);
  /// Restarts made no progress: says so, records it, reports the attempt's failure.
  int stopWithoutProgress(const RestartProgress& progress, const GroupOutcome& outcome, int attempt);

  boost::asio::io_context& context_;
  SupervisorOptions options_;
  OrphanGuard& guard_;
  ProcessRuntime runtime_;
  EventLog events_;
};

}  // namespace pltrun
