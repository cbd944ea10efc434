#pragma once
// Watches a running round from a thread of its own, on a store connection of its own, so
// the agent's event loop never blocks on the store:
//   - wakes as soon as rR/end is written (a worker failed elsewhere, an agent's connection
//     closed, a node wants to join) and hands the RoundEnd to the agent;
//   - beats: adds 1 to rR/beat/SLOT every keep-alive interval;
//   - watches one peer only, the next slot in the ring, so n agents cost O(n) requests per
//     interval in all: when the peer's counter has not moved for keep_alive_max_attempt
//     intervals of this agent's own clock, the peer is declared lost. No clocks of
//     different machines are ever compared.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "pltrun/error.h"
#include "pltrun/store.h"
#include "rendezvous/elastic/elastic_rendezvous.h"

namespace pltrun::rdzv {

struct RoundWatcherSettings {
  std::chrono::milliseconds keepAliveInterval{5000};
  int keepAliveMaxAttempt = 3;
  /// Longest single wait, so that stop() never waits long.
  std::chrono::milliseconds slice{250};
  /// How long the store may fail to answer (Network or Timeout errors) before the watcher
  /// reports it lost. 0, for a store an agent hosts: at once, since the others re-form
  /// without this node soon (fencing). A replicated store (etcd) that lost its quorum
  /// re-forms nobody meanwhile, so the workers keep running while it recovers.
  std::chrono::milliseconds outageTolerance{0};
  /// Whether the store has shut this process out (etcd: its lease is known to have
  /// expired): no outage is tolerated any more, since the others have re-formed without
  /// this node. Called from the watcher's thread. Empty: never.
  std::function<bool()> fenced;
};

class RoundWatcher {
 public:
  /// Called once, from the watcher's thread: the round ended.
  using OnEnd = std::function<void(const RoundEnd&)>;
  /// Called once, from the watcher's thread: the store cannot be reached any more.
  using OnStoreLost = std::function<void(const std::string& message)>;

  /// Starts watching `info.round`. `store` is this watcher's own connection.
  RoundWatcher(std::unique_ptr<Store> store, const ElasticRendezvous& rendezvous, const RoundInfo& info,
               RoundWatcherSettings settings, OnEnd onEnd, OnStoreLost onStoreLost);
  /// Stops and joins the thread.
  ~RoundWatcher();

  RoundWatcher(const RoundWatcher&) = delete;
  RoundWatcher& operator=(const RoundWatcher&) = delete;

 private:
  void run();
  bool watchOnce();
  std::string peerHostName();
  bool survivesOutage(const Error& error);
  void beatAndCheckPeer();

  std::unique_ptr<Store> store_;
  std::string endKey_;
  std::string ownBeatKey_;
  std::string peerBeatKey_;
  std::string peerSlotKey_;
  std::string peerHost_;
  std::string selfHost_;
  int nnodes_;
  RoundWatcherSettings settings_;
  OnEnd onEnd_;
  OnStoreLost onStoreLost_;
  std::atomic<bool> stopping_{false};
  std::chrono::steady_clock::time_point nextBeat_;
  std::int64_t peerLastSeen_ = -1;
  int peerMissed_ = 0;
  std::optional<std::chrono::steady_clock::time_point> outageSince_;
  std::thread thread_;
};

}  // namespace pltrun::rdzv
