#include "launcher/metrics/goodput_clock.h"

#include <algorithm>

namespace pltrun {
namespace {

double secondsBetween(GoodputClock::Clock::time_point from, GoodputClock::Clock::time_point to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

}  // namespace

void GoodputClock::attemptStarted() { attemptRaise_.reset(); }

void GoodputClock::progressed(Clock::time_point at, long long counter) {
  if (finished_ || (highest_ && counter <= *highest_)) return;  // redone steps, or after the end
  highest_ = counter;
  if (attemptRaise_) productive_ += secondsBetween(*attemptRaise_, at);
  attemptRaise_ = at;
  lastRaise_ = at;
  endOpenLoss(at);
}

void GoodputClock::restarted(Clock::time_point at) {
  if (finished_) return;
  // The attempt is over: its raises no longer start a productive stretch.
  attemptRaise_.reset();
  // From the last raise (the job's start before any), unless no raise came since the
  // previous restart: its loss then ends here, where this one's begins.
  Clock::time_point from = endOpenLoss(at) ? at : lastRaise_.value_or(started_);
  losses_.push_back(Loss{++restarts_, from, std::nullopt});
  if (losses_.size() > kKeptRestarts) losses_.pop_front();
}

bool GoodputClock::endOpenLoss(Clock::time_point at) {
  if (losses_.empty() || losses_.back().to) return false;
  losses_.back().to = at;
  closedLost_ += seconds(losses_.back(), at);
  return true;
}

void GoodputClock::finished(Clock::time_point at) {
  if (!finished_) finished_ = at;
}

GoodputClock::Clock::time_point GoodputClock::stopped(Clock::time_point now) const {
  return finished_ ? std::min(now, *finished_) : now;
}

double GoodputClock::seconds(const Loss& loss, Clock::time_point now) const {
  return secondsBetween(loss.from, loss.to.value_or(stopped(now)));
}

Goodput GoodputClock::at(Clock::time_point now) const {
  Goodput goodput;
  goodput.productiveSeconds = productive_;
  goodput.elapsedSeconds = secondsBetween(started_, stopped(now));
  goodput.lostSeconds = closedLost_;
  if (!losses_.empty() && !losses_.back().to) goodput.lostSeconds += seconds(losses_.back(), now);
  return goodput;
}

std::deque<RestartLoss> GoodputClock::restartLosses(Clock::time_point now) const {
  std::deque<RestartLoss> kept;
  for (const Loss& loss : losses_) kept.push_back({loss.restart, seconds(loss, now)});
  return kept;
}

}  // namespace pltrun
