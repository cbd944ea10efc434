// ProgressTracker: which workers count as stalled under a fixed --stall-timeout and under
// `auto`, with the times passed in (no clock).

#include "launcher/stall/progress_tracker.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <vector>

using pltrun::kAutoStallFactor;
using pltrun::kAutoStallFloor;
using pltrun::kAutoStallIntervals;
using pltrun::ProgressTracker;
using pltrun::StallTimeout;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

const ProgressTracker::Clock::time_point kStart{seconds(1000)};

StallTimeout fixedTimeout(milliseconds timeout) { return StallTimeout{false, timeout}; }
StallTimeout autoTimeout() { return StallTimeout{true, {}}; }

// `worker` beats `count` times, `interval` apart, from `from`; returns the last beat's time.
ProgressTracker::Clock::time_point beatEvery(ProgressTracker& tracker, size_t worker,
                                             ProgressTracker::Clock::time_point from, milliseconds interval,
                                             int count) {
  ProgressTracker::Clock::time_point at = from;
  for (int beat = 0; beat < count; ++beat) {
    at = from + interval * beat;
    tracker.beat(worker, at, beat);
  }
  return at;
}

}  // namespace

TEST_CASE("progress tracker: a worker that never sent a heartbeat is never stalled", "[progress_tracker]") {
  ProgressTracker tracker(2);
  tracker.beat(0, kStart, 1);
  const auto muchLater = kStart + std::chrono::hours(24);
  CHECK(tracker.stalled(muchLater, fixedTimeout(seconds(4))) == std::vector<size_t>{0});
  CHECK(tracker.stalled(muchLater, autoTimeout()).empty());  // worker 0 has no intervals yet
  CHECK_FALSE(tracker.progress(1).lastBeat);
  ProgressTracker silent(3);
  CHECK(silent.stalled(muchLater, fixedTimeout(milliseconds(1))).empty());
}

TEST_CASE("progress tracker: stalled once silent for longer than the fixed timeout", "[progress_tracker]") {
  ProgressTracker tracker(2);
  tracker.beat(0, kStart, 5);
  tracker.beat(1, kStart + seconds(2), std::nullopt);
  const StallTimeout timeout = fixedTimeout(seconds(4));
  CHECK(tracker.allowedSilence(0, timeout) == ProgressTracker::Clock::duration(seconds(4)));
  CHECK(tracker.stalled(kStart + seconds(4), timeout).empty());
  CHECK(tracker.stalled(kStart + seconds(4) + milliseconds(1), timeout) == std::vector<size_t>{0});
  CHECK(tracker.stalled(kStart + seconds(6) + milliseconds(1), timeout) == std::vector<size_t>{0, 1});
  // A heartbeat resets the silence; a payload that was no number keeps the last counter.
  tracker.beat(0, kStart + seconds(5), std::nullopt);
  CHECK(tracker.stalled(kStart + seconds(6) + milliseconds(1), timeout) == std::vector<size_t>{1});
  CHECK(tracker.progress(0).counter == 5);
  CHECK_FALSE(tracker.progress(1).counter);
}

TEST_CASE("progress tracker: a worker that ended is not stalled", "[progress_tracker]") {
  ProgressTracker tracker(2);
  tracker.beat(0, kStart, 1);
  tracker.beat(1, kStart, 1);
  tracker.ended(1);
  CHECK(tracker.stalled(kStart + seconds(60), fixedTimeout(seconds(4))) == std::vector<size_t>{0});
}

TEST_CASE("progress tracker: auto waits for enough intervals, then allows max(floor, factor x longest interval)",
          "[progress_tracker]") {
  ProgressTracker tracker(1);
  // One beat more than intervals needed, a second apart: the last beat completes them.
  auto last = beatEvery(tracker, 0, kStart, milliseconds(1000), kAutoStallIntervals);
  CHECK(tracker.progress(0).intervals == kAutoStallIntervals - 1);
  CHECK_FALSE(tracker.allowedSilence(0, autoTimeout()));
  CHECK(tracker.stalled(last + std::chrono::hours(24), autoTimeout()).empty());

  last += seconds(1);
  tracker.beat(0, last, kAutoStallIntervals);
  CHECK(tracker.progress(0).intervals == kAutoStallIntervals);
  // 5 x 1 s is under the floor: the floor applies.
  REQUIRE(tracker.allowedSilence(0, autoTimeout()) == ProgressTracker::Clock::duration(kAutoStallFloor));
  CHECK(tracker.stalled(last + kAutoStallFloor, autoTimeout()).empty());
  CHECK(tracker.stalled(last + kAutoStallFloor + milliseconds(1), autoTimeout()) == std::vector<size_t>{0});
}

TEST_CASE("progress tracker: auto's interval is the longest of any worker, above the floor", "[progress_tracker]") {
  ProgressTracker tracker(2);
  const milliseconds slow(30000);  // 5 x 30 s = 150 s, over the 60 s floor
  REQUIRE(slow * kAutoStallFactor > kAutoStallFloor);
  const auto slowLast = beatEvery(tracker, 1, kStart, slow, kAutoStallIntervals + 1);
  // Worker 0 beats every second, its last beat half a second after worker 1's.
  const auto fastFirst = slowLast + milliseconds(500) - milliseconds(1000) * kAutoStallIntervals;
  beatEvery(tracker, 0, fastFirst, milliseconds(1000), kAutoStallIntervals + 1);
  REQUIRE(tracker.progress(0).longestInterval == ProgressTracker::Clock::duration(milliseconds(1000)));
  const auto expected = std::chrono::duration_cast<ProgressTracker::Clock::duration>(slow * kAutoStallFactor);
  // Worker 0 steps every second, but the ranks of a job step together: it gets 150 s too.
  CHECK(tracker.allowedSilence(0, autoTimeout()) == expected);
  CHECK(tracker.allowedSilence(1, autoTimeout()) == expected);
  CHECK(tracker.progress(1).longestInterval == ProgressTracker::Clock::duration(slow));
  CHECK(tracker.stalled(slowLast + expected, autoTimeout()).empty());
  CHECK(tracker.stalled(slowLast + expected + milliseconds(1), autoTimeout()) == std::vector<size_t>{1});
  CHECK(tracker.stalled(slowLast + expected + milliseconds(501), autoTimeout()) == std::vector<size_t>{0, 1});
}

TEST_CASE("progress tracker: a heartbeat out of order neither counts as an interval nor moves time back",
          "[progress_tracker]") {
  ProgressTracker tracker(1);
  tracker.beat(0, kStart + seconds(10), 2);
  tracker.beat(0, kStart, 1);
  CHECK(tracker.progress(0).intervals == 0);
  CHECK(tracker.progress(0).lastBeat == kStart + seconds(10));
}

TEST_CASE("progress tracker: keeps the highest counter a worker sent as well as its last", "[progress_tracker]") {
  ProgressTracker tracker(1);
  CHECK_FALSE(tracker.progress(0).highestCounter);
  tracker.beat(0, kStart, 8);
  tracker.beat(0, kStart + seconds(1), 3);  // a counter that starts again (an epoch's step)
  tracker.beat(0, kStart + seconds(2), std::nullopt);
  CHECK(tracker.progress(0).counter == 3);
  CHECK(tracker.progress(0).highestCounter == 8);
}
