#include "rendezvous/elastic/round_watcher.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <thread>

#include "base/printable_key.h"
#include "base/seconds_text.h"
#include "pltrun/error.h"

namespace pltrun::rdzv {

using Clock = std::chrono::steady_clock;

RoundWatcher::RoundWatcher(std::unique_ptr<Store> store, const ElasticRendezvous& rendezvous, const RoundInfo& info,
                           RoundWatcherSettings settings, OnEnd onEnd, OnStoreLost onStoreLost)
    : store_(std::move(store)),
      endKey_(rendezvous.key(layout::end(info.round))),
      ownBeatKey_(rendezvous.key(layout::beat(info.round, info.slot))),
      selfHost_(rendezvous.self().host),
      nnodes_(info.assignment.nnodes),
      settings_(settings),
      onEnd_(std::move(onEnd)),
      onStoreLost_(std::move(onStoreLost)) {
  const int peerSlot = ringPeerSlot(info);
  peerBeatKey_ = rendezvous.key(layout::beat(info.round, peerSlot));
  peerSlotKey_ = rendezvous.key(layout::slot(info.round, peerSlot));
  nextBeat_ = Clock::now();
  thread_ = std::thread([this] { run(); });
}

RoundWatcher::~RoundWatcher() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void RoundWatcher::run() {
  while (!stopping_) {
    try {
      if (watchOnce()) return;
      if (outageSince_) {
        spdlog::info("the rendezvous store answers again; round goes on");
        outageSince_.reset();
        peerLastSeen_ = -1;  // its beats could not be counted meanwhile
        peerMissed_ = 0;
      }
    } catch (const Error& error) {
      if (stopping_) return;
      if (!survivesOutage(error)) {
        onStoreLost_(error.what());
        return;
      }
      std::this_thread::sleep_for(settings_.slice);
    }
  }
}

// One beat (when due) and one wait for the round's end; true once the end was handed over.
bool RoundWatcher::watchOnce() {
  if (nnodes_ > 1 && peerHost_.empty()) peerHost_ = peerHostName();
  if (Clock::now() >= nextBeat_) beatAndCheckPeer();
  const auto untilBeat = std::chrono::duration_cast<std::chrono::milliseconds>(nextBeat_ - Clock::now());
  const auto wait = std::max(std::chrono::milliseconds(1), std::min(settings_.slice, untilBeat));
  try {
    store_->wait({endKey_}, wait);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::Timeout) return false;
    throw;
  }
  if (!stopping_) onEnd_(RoundEnd::fromStoreValue(endKey_, store_->get(endKey_)));
  return true;
}

// The watched node's host, for the message that says it was lost; a descriptor that is not
// pltrun's (the store's values are untrusted) leaves the key's name instead.
std::string RoundWatcher::peerHostName() {
  const std::string text = store_->get(peerSlotKey_);
  try {
    return nodeDescriptorFromJson(text).host;
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Protocol) throw;
    return "the node at " + printableKey(peerSlotKey_);
  }
}

// The store did not answer: within the outage tolerance the workers keep running, and the
// watcher says so once.
bool RoundWatcher::survivesOutage(const Error& error) {
  if (settings_.outageTolerance.count() <= 0) return false;
  if (settings_.fenced && settings_.fenced()) return false;
  if (error.code() != ErrorCode::Network && error.code() != ErrorCode::Timeout) return false;
  const auto now = Clock::now();
  if (!outageSince_) {
    outageSince_ = now;
    spdlog::warn(
        "the rendezvous store does not answer ({}); this node's workers keep running while it recovers, for up to {} s",
        error.what(), secondsText(settings_.outageTolerance));
  }
  return now - *outageSince_ < settings_.outageTolerance;
}

void RoundWatcher::beatAndCheckPeer() {
  nextBeat_ = Clock::now() + settings_.keepAliveInterval;
  store_->add(ownBeatKey_, 1);
  if (nnodes_ < 2) return;
  const std::int64_t seen = store_->add(peerBeatKey_, 0);
  if (seen != peerLastSeen_) {
    peerLastSeen_ = seen;
    peerMissed_ = 0;
    return;
  }
  if (++peerMissed_ < settings_.keepAliveMaxAttempt) return;
  RoundEnd lost;
  lost.reason = RoundEnd::Reason::NodeLost;
  lost.host = peerHost_;
  lost.message = "no heartbeat for " + secondsText(settings_.keepAliveInterval * settings_.keepAliveMaxAttempt) +
                 " s, seen from " + selfHost_;
  store_->compareSet(endKey_, "", lost.toJson());
  peerMissed_ = 0;
}

}  // namespace pltrun::rdzv
