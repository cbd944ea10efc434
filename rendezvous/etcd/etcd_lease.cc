#include "rendezvous/etcd/etcd_lease.h"

#include <nlohmann/json.hpp>

#include "pltrun/error.h"

namespace pltrun::etcd {

namespace {

// The notice watcher holds one watch this long, and looks every slice (locally) whether the
// lease is being destroyed, so that the destructor never waits long. After a failed watch
// it waits a slice before the next.
constexpr std::chrono::seconds kNoticeWatchSpan{60};
constexpr std::chrono::milliseconds kWatchSlice{100};

// Thrown between the notice watch's slices once the lease is being destroyed.
struct Stopping {};

// Fires the notice a DELETE event carries (its owner's lease ended): create-if-absent, so
// that every surviving process may fire it and the first one wins, as does any value
// written to the key before.
void fireNotice(EtcdClient& client, const WatchEvent& event) {
  if (!event.deleted || !event.prevKv || event.prevKv->value.empty()) return;
  const nlohmann::json notice = nlohmann::json::parse(event.prevKv->value, nullptr, false);
  if (!notice.is_object() || !notice.contains("key") || !notice.contains("value")) return;
  if (!notice["key"].is_string() || !notice["value"].is_string()) return;
  client.create(notice["key"].get<std::string>(), notice["value"].get<std::string>());
}

}  // namespace

std::string parkedNotice(const std::string& key, const std::string& value) {
  return nlohmann::json{{"key", key}, {"value", value}}.dump();
}

EtcdLease::EtcdLease(const EtcdClientOptions& client, std::chrono::seconds ttl, std::string noticePrefix)
    : ttl_(ttl), noticePrefix_(std::move(noticePrefix)), revoker_(client) {
  id_ = revoker_.grantLease(ttl.count()).id;
  lastRenewal_ = std::chrono::steady_clock::now().time_since_epoch().count();
  keepAlive_ = std::thread([this, client] { keepAliveLoop(client); });
  noticeWatcher_ = std::thread([this, client] { fireNoticesLoop(client); });
}

EtcdLease::~EtcdLease() {
  stopping_ = true;
  wake_.notify_all();
  keepAlive_.join();
  noticeWatcher_.join();
  try {
    revoker_.revokeLease(id_);
  } catch (const Error&) {
    // etcd is gone: the lease expires by itself, and the survivors fire its notices.
  }
}

// Renews the lease three times per time to live, so that two renewals may fail (a member
// down, an election) before it could lapse.
void EtcdLease::keepAliveLoop(EtcdClientOptions options) {
  EtcdClient client(options);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::duration_cast<std::chrono::milliseconds>(ttl_) / 3);
    if (stopping_) return;
    lock.unlock();
    try {
      if (client.keepAlive(id_) == 0) {
        expired_ = true;
      } else {
        lastRenewal_ = std::chrono::steady_clock::now().time_since_epoch().count();
      }
    } catch (const Error&) {
      // Unreachable or without a quorum: try again, the lease is kept meanwhile.
    }
    lock.lock();
    if (expired_) return;
  }
}

// A lease renewed within half its time to live is alive: no request then, so that a job
// of many agents pays for the question only after an outage.
bool EtcdLease::confirmExpired() {
  if (expired_) return true;
  if (sinceLastRenewal() * 2 < ttl_) return false;
  std::lock_guard<std::mutex> lock(askMutex_);
  try {
    if (revoker_.keepAlive(id_) == 0) expired_ = true;
  } catch (const Error&) {
    // Unreachable: nothing more is known.
  }
  return expired_;
}

std::chrono::milliseconds EtcdLease::sinceLastRenewal() const {
  const std::chrono::steady_clock::duration since(lastRenewal_.load());
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch() -
                                                               since);
}

// Watches the notices of every process of the job from now on, resuming after a broken
// watch from the revision after the last it saw. Only their deletions (a lease ended): in a
// job of N agents each parks and clears its notice every round, and every agent seeing
// every put would make N² events a round.
void EtcdLease::fireNoticesLoop(EtcdClientOptions options) {
  EtcdClient client(options);
  std::int64_t from = 0;
  while (!stopping_) {
    try {
      if (from == 0) from = client.getPrefix(noticePrefix_).revision + 1;
      const StreamPacing pacing{kWatchSlice, [this] {
                                  if (stopping_) throw Stopping{};
                                }};
      WatchMessage message =
          client.watchDeletes(noticePrefix_, prefixEnd(noticePrefix_), from, kNoticeWatchSpan, pacing);
      if (message.canceled) from = 0;  // compacted: start again from now
      // A span without a deletion: none happened up to the revision the watch began at
      // (etcd would have sent it at once), so the next watch starts after it.
      if (!message.canceled && message.events.empty()) from = std::max(from, message.revision + 1);
      for (const WatchEvent& event : message.events) {
        fireNotice(client, event);
        from = std::max(from, event.kv.modRevision + 1);
      }
    } catch (const Stopping&) {
      return;
    } catch (const Error&) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, kWatchSlice);
    }
  }
}

}  // namespace pltrun::etcd
