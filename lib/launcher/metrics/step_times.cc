#include "launcher/metrics/step_times.h"

#include <algorithm>
#include <vector>

namespace pltrun {

void StepTimes::beat(Clock::time_point at, long long counter) {
  if (last_ && counter == last_->counter) return;
  if (last_ && counter > last_->counter) {
    std::chrono::duration<double> took = at - last_->at;
    // The advance as a double: counters are the workers' own numbers, and a jump of 2^63
    // must not overflow the subtraction.
    double advance = static_cast<double>(counter) - static_cast<double>(last_->counter);
    recent_[next_] = std::max(0.0, took.count()) / advance;
    next_ = (next_ + 1) % kRecentSteps;
    count_ = std::min(count_ + 1, kRecentSteps);
  }
  last_ = Reached{at, counter};
}

std::optional<double> StepTimes::medianSeconds() const {
  if (count_ == 0) return std::nullopt;
  std::vector<double> steps(recent_.begin(), recent_.begin() + static_cast<std::ptrdiff_t>(count_));
  auto middle = steps.begin() + static_cast<std::ptrdiff_t>(count_ / 2);
  std::nth_element(steps.begin(), middle, steps.end());
  if (count_ % 2 == 1) return *middle;
  // An even count: the mean of the two middle steps (the lower one is the largest below).
  double lower = *std::max_element(steps.begin(), middle);
  return (lower + *middle) / 2;
}

}  // namespace pltrun
