#include "launcher/stall/progress_tracker.h"

#include <algorithm>

namespace pltrun {

void ProgressTracker::beat(size_t worker, Clock::time_point at, std::optional<long long> counter) {
  WorkerProgress& progress = workers_.at(worker);
  if (progress.lastBeat && at > *progress.lastBeat) {
    const Clock::duration interval = at - *progress.lastBeat;
    progress.longestInterval = std::max(progress.longestInterval, interval);
    longestInterval_ = std::max(longestInterval_, interval);
    ++progress.intervals;
  }
  if (!progress.lastBeat || at > *progress.lastBeat) progress.lastBeat = at;
  if (counter) {
    progress.counter = counter;
    if (!progress.highestCounter || *counter > *progress.highestCounter) progress.highestCounter = counter;
  }
}

std::optional<ProgressTracker::Clock::duration> ProgressTracker::allowedSilence(size_t worker,
                                                                                const StallTimeout& policy) const {
  if (!policy.automatic) return policy.fixed;
  if (workers_.at(worker).intervals < kAutoStallIntervals) return std::nullopt;
  const auto learned = std::chrono::duration_cast<Clock::duration>(longestInterval_ * kAutoStallFactor);
  return std::max<Clock::duration>(learned, kAutoStallFloor);
}

std::vector<size_t> ProgressTracker::stalled(Clock::time_point now, const StallTimeout& policy) const {
  std::vector<size_t> stalled;
  for (size_t worker = 0; worker < workers_.size(); ++worker) {
    const WorkerProgress& progress = workers_[worker];
    if (progress.ended || !progress.lastBeat) continue;
    const std::optional<Clock::duration> allowed = allowedSilence(worker, policy);
    if (allowed && now - *progress.lastBeat > *allowed) stalled.push_back(worker);
  }
  return stalled;
}

}  // namespace pltrun
