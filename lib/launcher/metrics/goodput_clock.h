#pragma once
// Goodput's accounting (job_metrics.h defines it): which wall time was productive, which
// was lost to each restart. Pure: every time is passed in.
//
// After the job's first raise of its highest progress counter, every instant is one of:
// productive (between two raises in one attempt), lost to a restart (from the last raise
// before it to the first raise after it, which starts the next productive stretch), or
// neither (since the last raise, while no restart has come). Nothing is counted twice, so
// productive + lost never exceeds elapsed.

#include <chrono>
#include <deque>
#include <optional>

#include "rendezvous/elastic/node_state.h"

namespace pltrun {

/// A job's goodput at one moment: the very values an agent publishes for `pltrun status`.
using Goodput = rdzv::NodeGoodput;

/// The seconds one restart lost.
struct RestartLoss {
  int restart = 0;  ///< 1 for the job's first restart
  double seconds = 0;
};

class GoodputClock {
 public:
  using Clock = std::chrono::steady_clock;
  /// How many restarts' losses are kept (the most recent; the total keeps every one).
  static constexpr size_t kKeptRestarts = 100;

  explicit GoodputClock(Clock::time_point jobStarted) : started_(jobStarted) {}

  /// A new attempt: the time to its first raise is start-up, not productive.
  void attemptStarted();
  /// A rank's progress counter at `at` (any rank, any attempt).
  void progressed(Clock::time_point at, long long counter);
  void restarted(Clock::time_point at);
  /// Time stops at `at`: elapsed and an open restart's loss grow no more.
  void finished(Clock::time_point at);

  Goodput at(Clock::time_point now) const;
  /// The most recent restarts' losses, oldest first; the last grows with `now` while no
  /// raise has come since it.
  std::deque<RestartLoss> restartLosses(Clock::time_point now) const;

 private:
  struct Loss {
    int restart = 0;
    Clock::time_point from;
    std::optional<Clock::time_point> to;  ///< none: no raise yet since the restart
  };
  /// Ends the open restart's loss at `at`; false when none is open.
  bool endOpenLoss(Clock::time_point at);
  /// `now`, or the job's end when it is over.
  Clock::time_point stopped(Clock::time_point now) const;
  double seconds(const Loss& loss, Clock::time_point now) const;

  Clock::time_point started_;
  std::optional<Clock::time_point> finished_;
  std::optional<long long> highest_;               ///< over every rank and attempt
  std::optional<Clock::time_point> lastRaise_;     ///< the last raise of the job
  std::optional<Clock::time_point> attemptRaise_;  ///< the last raise of this attempt
  double productive_ = 0;
  double closedLost_ = 0;  ///< every restart's whose loss has ended, dropped ones included
  std::deque<Loss> losses_;
  int restarts_ = 0;
};

}  // namespace pltrun
