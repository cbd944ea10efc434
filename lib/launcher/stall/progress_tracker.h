#pragma once
// Pure: the heartbeats of one attempt's workers, and which of them have stalled. A worker
// that never sent a heartbeat is never stalled (its first step may take minutes: compiling,
// loading a checkpoint); nor is one that has ended. Times are passed in, so the tests need
// no clock.

#include <chrono>
#include <optional>
#include <vector>

#include "launcher/plan/stall_timeout.h"

namespace pltrun {

struct WorkerProgress {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> lastBeat;  ///< none: it never sent a heartbeat
  std::optional<long long> counter;           ///< the last progress counter (step) it sent
  std::optional<long long> highestCounter;    ///< the highest it sent (--max-no-progress-restarts)
  Clock::duration longestInterval{0};         ///< between two of its heartbeats
  int intervals = 0;                          ///< how many intervals were seen
  bool ended = false;
};

class ProgressTracker {
 public:
  using Clock = WorkerProgress::Clock;

  explicit ProgressTracker(size_t workers) : workers_(workers) {}

  /// A heartbeat of `worker` at `at`; `counter` when its payload was a number.
  void beat(size_t worker, Clock::time_point at, std::optional<long long> counter);
  /// `worker` has exited: it is no longer watched.
  void ended(size_t worker) { workers_.at(worker).ended = true; }

  const WorkerProgress& progress(size_t worker) const { return workers_.at(worker); }
  size_t size() const { return workers_.size(); }

  /// How long `worker` may be silent under `policy`; none while `auto` has not yet seen
  /// enough of its intervals to judge.
  std::optional<Clock::duration> allowedSilence(size_t worker, const StallTimeout& policy) const;
  /// The workers that beat once and have been silent longer than allowed at `now`.
  std::vector<size_t> stalled(Clock::time_point now, const StallTimeout& policy) const;

 private:
  std::vector<WorkerProgress> workers_;
  Clock::duration longestInterval_{0};  ///< over every worker: ranks of one job step together
};

}  // namespace pltrun
