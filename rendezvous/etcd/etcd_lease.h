#pragma once
// One process's liveness in etcd: a lease, kept alive from a thread of its own, to which
// the process attaches its ephemeral keys and parked close notices; and the watcher that
// fires the close notices of processes whose lease expired (they died, or froze for longer
// than the lease's time to live). Shared by every EtcdStore client of the process.
//
// While etcd does not answer (a member down, no quorum) the keep-alive keeps trying: a
// lease outlives a change of leader. Once etcd says the lease is gone, the lease is
// expired for good and every client of it refuses to work (fencing: the others may have
// re-formed the job without this process).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "rendezvous/etcd/etcd_client.h"

namespace pltrun::etcd {

class EtcdLease {
 public:
  /// Grants the lease (throws Error(Network) naming the endpoints when none answers) and
  /// starts the keep-alive and the watcher of close notices under `noticePrefix`.
  EtcdLease(const EtcdClientOptions& client, std::chrono::seconds ttl, std::string noticePrefix);
  /// Stops both threads and revokes the lease: this process's leased keys go at once.
  ~EtcdLease();
  EtcdLease(const EtcdLease&) = delete;
  EtcdLease& operator=(const EtcdLease&) = delete;

  std::int64_t id() const { return id_; }
  bool expired() const { return expired_; }
  /// Asks etcd once, now, whether the lease is still alive (the keep-alive thread may not
  /// have tried since etcd answers again); true once it is known gone. Unreachable: what
  /// is known already.
  bool confirmExpired();
  /// How long ago etcd last renewed the lease (granted it, at first).
  std::chrono::milliseconds sinceLastRenewal() const;
  const std::string& noticePrefix() const { return noticePrefix_; }

 private:
  void keepAliveLoop(EtcdClientOptions client);
  void fireNoticesLoop(EtcdClientOptions client);

  std::int64_t id_ = 0;
  std::chrono::seconds ttl_;
  std::string noticePrefix_;
  std::atomic<bool> expired_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<std::chrono::steady_clock::rep> lastRenewal_{0};  ///< steady_clock ticks
  std::mutex mutex_;
  std::condition_variable wake_;
  std::mutex askMutex_;  ///< confirmExpired's, so that the keep-alive never waits on it
  EtcdClient revoker_;   ///< revokes; confirmExpired asks with it, under askMutex_
  std::thread keepAlive_;
  std::thread noticeWatcher_;
};

/// A parked close notice: the JSON {"key":..,"value":..} its owner leaves under the notice
/// prefix. Empty text parks nothing (a cleared notice).
std::string parkedNotice(const std::string& key, const std::string& value);

}  // namespace pltrun::etcd
