#pragma once
// What `--metrics` exposes (docs/METRICS.md), the pure half: a job's workers, heartbeats,
// restarts, rendezvous rounds, stalls and goodput as one launcher (a single-node job or an
// elastic agent) sees them, rendered as Prometheus's text exposition format (0.0.4). No
// I/O, no clock: every time is passed in, so every metric is tested from made-up events
// (tests/unit/job_metrics_test.cc). MetricsRecorder (metrics_recorder.h) is its thread-safe
// shell, MetricsServer (metrics_server.h) serves render()'s text over HTTP.
//
// Goodput, as defined here (and in docs/METRICS.md):
// - productive seconds: wall time during which the job's progress went beyond anything it
//   had reached before. A heartbeat whose counter raises the node's highest counter so far
//   (over every rank and attempt) makes the time since the previous such raise, in the same
//   attempt, productive. The first step of an attempt (start-up) and steps redone after a
//   restart (counters below the highest already reached) are not productive.
// - lost seconds of restart N: from the last raise before it (the job's start before any;
//   restart N-1 when no raise came between the two) to the first raise after it, where
//   productive time starts again (detection, stopping, rendezvous, start-up and redone
//   steps); while no raise has come since, it grows with `now`. No second is both lost and
//   productive, or lost to two restarts.
// - the ratio: productive seconds over seconds since the job started. Workers that send no
//   counter give a ratio of 0: goodput needs progress counters (pltrun.heartbeat(step)).

#include <sys/types.h>

#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/metrics/goodput_clock.h"
#include "launcher/metrics/restart_cause.h"
#include "launcher/metrics/step_times.h"

namespace pltrun {

/// The labels every metric of this launcher carries.
struct MetricsIdentity {
  std::string job;   ///< the run id (--rdzv-id, else the generated one)
  std::string node;  ///< node_name= of --rdzv-conf, else this host's name
};

/// One worker as it starts: the `pltrun_rank_info` metric's labels.
struct RankIdentity {
  int rank = 0;
  int localRank = 0;
  pid_t pid = 0;
  std::optional<int> gpuIndex;  ///< NVML's index of its GPU (DCGM's `gpu` label); none: no GPU
  std::string gpuUuid;          ///< "GPU-..." (DCGM's `UUID` label); empty: unknown
};

class PrometheusText;

/// How a worker ended, for `pltrun_workers{state=...}`.
enum class WorkerEnd { Succeeded, Failed, Stopped };

class JobMetrics {
 public:
  using Clock = std::chrono::steady_clock;

  JobMetrics(MetricsIdentity identity, Clock::time_point jobStarted);

  /// A new attempt (single node) or round (elastic) starts: the previous one's ranks are
  /// forgotten (their heartbeats, pids and step times), the counts and goodput are kept.
  void attemptStarted(int attempt, Clock::time_point at);
  void workerStarted(const RankIdentity& rank, Clock::time_point at);
  void workerEnded(int rank, WorkerEnd end, Clock::time_point at);
  /// A heartbeat of `rank` (PLTRUN_HEARTBEAT); `counter` when its payload was a number.
  void beat(int rank, Clock::time_point at, std::optional<long long> counter);
  void restarted(RestartCause cause, Clock::time_point at);
  /// An elastic round formed after `took` (from this agent's join to the round's completion).
  void rendezvousCompleted(std::chrono::duration<double> took);
  void stallDetected();
  /// The job is over: elapsed time stops at `at`.
  void jobFinished(Clock::time_point at);

  /// Seconds per step of `rank`: the median of its recent step intervals (the time between
  /// two heartbeats divided by the counter's advance); none before it has one.
  std::optional<double> stepSeconds(int rank) const;
  Goodput goodput(Clock::time_point now) const;

  /// Every metric, with # HELP and # TYPE, in Prometheus's text format 0.0.4. The per-rank
  /// series are those of the attempt's workers that have not ended (an ended rank's
  /// heartbeat age would grow as if it were stuck).
  std::string render(Clock::time_point now) const;

 private:
  /// One worker of the current attempt, as its events made it known.
  struct Rank {
    std::optional<RankIdentity> identity;  ///< none: it beat before its start was recorded
    std::optional<WorkerEnd> end;
    std::optional<Clock::time_point> lastBeat;
    std::optional<long long> counter;
    StepTimes steps;
  };
  struct Rendezvous {
    long long rounds = 0;
    double seconds = 0;
  };

  /// The ranks the per-rank series list: started, not ended.
  std::vector<const Rank*> listedRanks() const;
  void renderWorkers(PrometheusText& text) const;
  void renderRanks(PrometheusText& text, Clock::time_point now) const;
  void renderRankProgress(PrometheusText& text) const;
  void renderRestarts(PrometheusText& text) const;
  void renderGoodput(PrometheusText& text, Clock::time_point now) const;

  MetricsIdentity identity_;
  std::map<int, Rank> ranks_;                                    ///< the current attempt's, by rank
  std::array<long long, std::size(kRestartCauses)> restarts_{};  ///< by cause, kRestartCauses' order
  Rendezvous rendezvous_;
  long long stalls_ = 0;
  GoodputClock goodput_;
};

}  // namespace pltrun
