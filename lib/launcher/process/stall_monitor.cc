#include "launcher/process/stall_monitor.h"

#include "rendezvous/store/seconds_text.h"

namespace pltrun {

StallMonitor::StallMonitor(boost::asio::io_context& context, std::unique_ptr<Timer> checkTimer,
                           std::optional<StallTimeout> timeout, size_t workers)
    : context_(context), checkTimer_(std::move(checkTimer)), timeout_(timeout), tracker_(workers), sockets_(workers) {}

void StallMonitor::bind(size_t index, const std::string& path) {
  sockets_.at(index) = std::make_unique<HeartbeatSocket>(context_, path);
}

void StallMonitor::start(OnStall onStall) {
  onStall_ = std::move(onStall);
  for (size_t index = 0; index < sockets_.size(); ++index) {
    if (!sockets_[index]) continue;
    sockets_[index]->start([this, index](std::optional<long long> counter) {
      tracker_.beat(index, ProgressTracker::Clock::now(), counter);
    });
  }
  if (timeout_) {
    checking_ = true;
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
  if (progress.lastBeat) {
    evidence.silentSeconds = std::chrono::duration<double>(now - *progress.lastBeat).count();
    if (timeout_ && !progress.ended) {
      const auto allowed = tracker_.allowedSilence(index, *timeout_);
      evidence.stalled = allowed && now - *progress.lastBeat > *allowed;
    }
  }
  return evidence;
}

std::string StallMonitor::timeoutText() const {
  if (!timeout_) return "off";
  if (!timeout_->automatic) return rdzv::secondsText(timeout_->fixed) + " s";
  return "auto";
}

}  // namespace pltrun
