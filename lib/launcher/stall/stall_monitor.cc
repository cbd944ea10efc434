#include "launcher/stall/stall_monitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/seconds_text.h"

namespace pltrun {

// --stall-timeout refuses what the monitor could not tell from a worker that beats.
static_assert(StallMonitor::kCheckInterval <= kShortestStallTimeout);
static_assert(2 * kLongestReadWindow <= kShortestStallTimeout);

StallMonitor::StallMonitor(boost::asio::io_context& context, std::unique_ptr<Timer> checkTimer,
                           std::unique_ptr<Timer> readWindowTimer, std::optional<StallTimeout> timeout, size_t workers)
    : checkTimer_(std::move(checkTimer)),
      timeout_(timeout),
      tracker_(workers),
      heartbeats_(context, std::move(readWindowTimer), workers) {}

void StallMonitor::bind(size_t index, const std::string& path) { heartbeats_.bind(index, path); }

void StallMonitor::start(OnStall onStall, OnBeat onBeat) {
  onStall_ = std::move(onStall);
  heartbeats_.start([this, onBeat = std::move(onBeat)](size_t index, std::optional<long long> counter) {
    const auto now = ProgressTracker::Clock::now();
    tracker_.beat(index, now, counter);
    if (onBeat) onBeat(index, now, counter);
  });
  if (timeout_) {
    checking_ = true;
    started_ = ProgressTracker::Clock::now();
    scheduleCheck();
  }
}

void StallMonitor::stopChecking() {
  checking_ = false;
  checkTimer_->cancel();
}

void StallMonitor::scheduleCheck() {
  checkTimer_->expireAfter(kCheckInterval, [this] {
    if (!checking_) return;
    const std::vector<size_t> stalled = tracker_.stalled(ProgressTracker::Clock::now(), *timeout_);
    if (stalled.empty()) {
      warnWhileNoHeartbeat();
      scheduleCheck();
      return;
    }
    checking_ = false;  // reported once: the group stops every worker now
    onStall_(stalled);
  });
}

RankEvidence StallMonitor::progressEvidence(size_t index) const {
  const WorkerProgress& progress = tracker_.progress(index);
  const auto now = ProgressTracker::Clock::now();
  RankEvidence evidence;
  evidence.counter = progress.counter;
  evidence.highestCounter = progress.highestCounter;
  if (progress.lastBeat) {
    evidence.silentSeconds = std::chrono::duration<double>(now - *progress.lastBeat).count();
    if (timeout_ && !progress.ended) {
      const auto allowed = tracker_.allowedSilence(index, *timeout_);
      evidence.stalled = allowed && now - *progress.lastBeat > *allowed;
    }
  }
  return evidence;
}

// --stall-timeout watches nothing until a worker beats: say so once, when a first step should
// long be over, so that a user who forgot the heartbeats does not count on it.
void StallMonitor::warnWhileNoHeartbeat() {
  if (warnedNoHeartbeat_) return;
  for (size_t worker = 0; worker < tracker_.size(); ++worker) {
    if (tracker_.progress(worker).lastBeat) {
      warnedNoHeartbeat_ = true;
      return;
    }
  }
  const auto waited = ProgressTracker::Clock::now() - started_;
  if (waited < std::max<ProgressTracker::Clock::duration>(kNoHeartbeatWarning, timeout_->fixed)) return;
  warnedNoHeartbeat_ = true;
  spdlog::warn(
      "--stall-timeout watches no worker yet: none has sent a heartbeat in {:.0f} s; send one per step to "
      "$PLTRUN_HEARTBEAT (docs/USAGE.md, \"Hangs\")",
      std::chrono::duration<double>(waited).count());
}

std::optional<std::chrono::duration<double>> StallMonitor::timeoutInForce() const {
  if (!timeout_) return std::nullopt;
  for (size_t worker = 0; worker < tracker_.size(); ++worker) {
    if (auto allowed = tracker_.allowedSilence(worker, *timeout_)) return *allowed;
  }
  return std::nullopt;
}

std::string StallMonitor::timeoutText() const {
  if (!timeout_) return "off";
  const auto inForce = timeoutInForce();
  const std::string seconds = inForce ? secondsText(*inForce) + " s" : "not yet learned";
  return timeout_->automatic ? "auto (" + seconds + ")" : seconds;
}

}  // namespace pltrun
