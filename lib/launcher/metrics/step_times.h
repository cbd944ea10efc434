#pragma once
// One rank's seconds per step, from its heartbeats' progress counters: the median of its
// recent steps, so one slow step (a checkpoint, an evaluation) does not move it. Pure: the
// times are passed in.

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>

namespace pltrun {

class StepTimes {
 public:
  using Clock = std::chrono::steady_clock;
  /// How many recent steps the median is over.
  static constexpr size_t kRecentSteps = 16;

  /// A heartbeat at `at` with progress counter `counter`. A step is the time from the first
  /// beat that reached one counter to the first that reached a higher one, divided by the
  /// advance (a rank that beats every 10 steps sends 0, 10, 20...). Beats that repeat the
  /// counter measure nothing; a counter that goes back (a worker that restarted its count)
  /// starts over from it.
  void beat(Clock::time_point at, long long counter);
  /// The median of the recent steps, in seconds; none before the first step.
  std::optional<double> medianSeconds() const;

 private:
  struct Reached {
    Clock::time_point at;
    long long counter = 0;
  };
  std::optional<Reached> last_;
  std::array<double, kRecentSteps> recent_{};  ///< a ring: `next_` is the oldest once full
  size_t count_ = 0;
  size_t next_ = 0;
};

}  // namespace pltrun
