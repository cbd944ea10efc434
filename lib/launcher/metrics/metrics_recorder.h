#pragma once
// The thread-safe shell of JobMetrics: the launcher's event loop records into it (worker
// starts and ends, heartbeats, restarts, rounds), the metrics server's thread renders it. A
// mutex, held for one update or one render: a scrape never waits on the event loop, which an
// elastic agent leaves for seconds while it rendezvouses.

#include <functional>
#include <memory>
#include <mutex>

#include "launcher/metrics/job_metrics.h"

namespace pltrun {

struct GroupSettings;

class MetricsRecorder {
 public:
  using Clock = JobMetrics::Clock;

  MetricsRecorder(MetricsIdentity identity, Clock::time_point jobStarted);

  /// Runs `update` on the metrics under the lock (the event loop's side).
  void update(const std::function<void(JobMetrics&)>& update);
  /// render(now) under the lock (the server's side).
  std::string scrape(Clock::time_point now) const;
  Goodput goodput(Clock::time_point now) const;
  std::optional<double> stepSeconds(int rank) const;

 private:
  mutable std::mutex mutex_;
  JobMetrics metrics_;
};

/// Adds to `group`'s observers (after those already set, which still run) what the metrics
/// need of one attempt: each worker's start (its GPU from `gpuOf`), end, heartbeats and
/// stall. `recorder` must outlive the group.
void recordWorkerMetrics(GroupSettings& group, MetricsRecorder& recorder,
                         std::function<RankIdentity(int rank, int localRank, pid_t pid)> identify);

}  // namespace pltrun
