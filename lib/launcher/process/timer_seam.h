#pragma once
// The seam between a worker group and the clock. The group's deadlines (the grace period
// before SIGKILL, the stop delay after a failure, the output drain timeout) run on timers
// made here: steady_timer in the launcher (realProcessRuntime), timers the unit tests move
// forward by hand, so "SIGKILL exactly when the grace period ends" is tested without waiting.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace pltrun {

/// One deadline at a time.
class Timer {
 public:
  virtual ~Timer() = default;

  /// Calls `onExpiry` from the event loop once `delay` has passed. Replaces the wait in
  /// progress, whose callback then does not run.
  virtual void expireAfter(std::chrono::milliseconds delay, std::function<void()> onExpiry) = 0;
  /// Ends the wait in progress without its callback. A callback already queued to run (its
  /// deadline passed) may still run: callers check their own state in it.
  virtual void cancel() = 0;
};

class TimerFactory {
 public:
  virtual ~TimerFactory() = default;

  virtual std::unique_ptr<Timer> makeTimer(boost::asio::io_context& context) = 0;
};

}  // namespace pltrun
