#include "rendezvous/etcd/etcd_store.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <random>
#include <thread>

#include "base/stored_integer.h"
#include "pltrun/error.h"
#include "rendezvous/store/store_errors.h"

namespace pltrun::etcd {

namespace {

using Clock = std::chrono::steady_clock;

std::string withDefaultNoticePrefix(const EtcdStoreOptions& options) {
  return options.noticePrefix.empty() ? options.keyPrefix + "pltrun-notices/" : options.noticePrefix;
}

std::string keyList(const std::vector<std::string>& keys) {
  std::string text;
  for (const std::string& key : keys) text += (text.empty() ? "" : ", ") + key;
  return text;
}

// What a compare-and-set that lost found in the key instead (its failure branch read it).
std::optional<KeyValue> foundInstead(TxnResult& lost) {
  if (lost.kvs.empty()) return std::nullopt;
  return std::move(lost.kvs.front());
}

// Pauses a writer that lost a compare-and-set race, for a random time up to a bound that
// doubles with each loss (1 ms, 2 ms, ... 128 ms). etcd has no atomic increment: when
// hundreds of agents add to one counter at once (every agent takes a slot in the same
// round), retrying at once would make every success cost hundreds of failed transactions,
// each a raft entry; spread out, the writes go through about one per round trip.
class ContentionBackoff {
 public:
  void afterLoss() {
    const int bound = 1 << std::min(losses_++, 7);
    std::uniform_int_distribution<int> microseconds(0, bound * 1000);
    std::this_thread::sleep_for(std::chrono::microseconds(microseconds(random())));
  }

 private:
  static std::minstd_rand& random() {
    thread_local std::minstd_rand generator(std::random_device{}());
    return generator;
  }
  int losses_ = 0;
};

}  // namespace

EtcdStore::EtcdStore(EtcdStoreOptions options)
    : EtcdStore(options,
                std::make_shared<EtcdLease>(options.client, options.leaseTtl, withDefaultNoticePrefix(options))) {}

EtcdStore::EtcdStore(EtcdStoreOptions options, std::shared_ptr<EtcdLease> lease)
    : Store(options.timeout), options_(std::move(options)), lease_(std::move(lease)), client_(options_.client) {
  static std::atomic<int> clients{0};
  noticeKey_ = lease_->noticePrefix() + std::to_string(lease_->id()) + "/" + std::to_string(clients++);
}

EtcdStore::~EtcdStore() {
  try {
    if (!noticeTarget_.empty()) {
      client_.create(noticeTarget_, noticeValue_);
      client_.put(noticeKey_, "", lease_->id());  // parked no more: its lease's end fires nothing
    }
    for (const std::string& key : ephemeral_) client_.erase(key);
  } catch (const Error&) {
    // etcd is gone: the lease expires by itself; the survivors fire the notice and the
    // ephemeral keys go with the lease.
  }
}

std::unique_ptr<EtcdStore> EtcdStore::connect() const {
  return std::unique_ptr<EtcdStore>(new EtcdStore(options_, lease_));
}

EtcdClient& EtcdStore::client() {
  if (lease_->expired()) {
    throw Error(ErrorCode::Network,
                "etcd: this process's lease expired (it could not reach etcd, or was frozen, for longer than its " +
                    std::to_string(options_.leaseTtl.count()) + " s time to live); the others go on without it");
  }
  return client_;
}

void EtcdStore::set(const std::string& key, const std::string& value) { client().put(etcdKey(key), value); }

std::string EtcdStore::get(const std::string& key, Duration timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (std::optional<KeyValue> found = client().get(etcdKey(key))) return storedValue(*found);
    wait({key}, std::chrono::ceil<Duration>(deadline - Clock::now()));  // ceil: never short of the timeout
  }
}

std::string EtcdStore::update(const std::string& key, const std::function<std::string(const std::string*)>& change) {
  std::optional<KeyValue> now = client().get(key);
  ContentionBackoff backoff;
  for (;;) {
    const std::string current = now ? storedValue(*now) : "";
    const std::string next = change(now ? &current : nullptr);
    TxnResult result = now ? client().swap(key, now->modRevision, next) : client().create(key, next);
    if (result.succeeded) return next;
    now = foundInstead(result);
    backoff.afterLoss();
  }
}

std::int64_t EtcdStore::add(const std::string& key, std::int64_t delta) {
  std::int64_t result = 0;
  try {
    // add(key, 0) is how the rounds read a counter: a read, and a missing counter is created
    // once (whoever loses that race reads what the winner wrote), so that hundreds of agents
    // reading at once do not write (each write a raft entry racing the others).
    if (delta == 0) {
      std::optional<KeyValue> now = client().get(etcdKey(key));
      if (!now) {
        TxnResult created = client().create(etcdKey(key), "0");
        if (created.succeeded) return 0;
        now = foundInstead(created);
      }
      if (now) {
        const std::string count = storedValue(*now);
        return addToStoredInteger(key, &count, 0);
      }
    }
    update(etcdKey(key), [&](const std::string* value) {
      result = addToStoredInteger(key, value, delta);
      return std::to_string(result);
    });
  } catch (const std::invalid_argument& notInteger) {
    throw Error(ErrorCode::InvalidArgument, std::string("etcd: ") + notInteger.what());
  }
  return result;
}

void EtcdStore::append(const std::string& key, const std::string& value) {
  update(etcdKey(key), [&](const std::string* current) { return (current ? *current : "") + value; });
}

std::string EtcdStore::compareSet(const std::string& key, const std::string& expected, const std::string& desired) {
  const std::string full = etcdKey(key);
  std::optional<KeyValue> now = client().get(full);
  ContentionBackoff backoff;
  for (;;) {
    if (!now && !expected.empty()) return expected;
    if (now && storedValue(*now) != expected) return storedValue(*now);
    TxnResult result = now ? client().swap(full, now->modRevision, desired) : client().create(full, desired);
    if (result.succeeded) return desired;
    now = foundInstead(result);
    backoff.afterLoss();
  }
}

bool EtcdStore::check(const std::vector<std::string>& keys) {
  for (const std::optional<KeyValue>& kv : client().rangeAll(etcdKeys(keys)).kvs) {
    if (!kv) return false;
  }
  return true;
}

// Reads the keys; while some are missing, watches the smallest range holding them from the
// revision of that read on, so that no write in between is missed.
void EtcdStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::vector<std::string> full = etcdKeys(keys);
  for (;;) {
    const RangeAllResult read = client().rangeAll(full);
    std::string first, last;
    for (size_t index = 0; index < full.size(); ++index) {
      if (read.kvs[index]) continue;
      if (first.empty() || full[index] < first) first = full[index];
      if (last.empty() || full[index] > last) last = full[index];
    }
    if (first.empty()) return;
    const auto left = std::chrono::duration_cast<Duration>(deadline - Clock::now());
    const WatchMessage changed = left.count() > 0
                                     ? client().watch(first, first == last ? "" : last + '\0', read.revision + 1, left)
                                     : WatchMessage{};
    if (changed.events.empty() && !changed.canceled && Clock::now() >= deadline) {
      throw Error(ErrorCode::Timeout, "etcd: timed out after " + std::to_string(timeout.count()) + " ms waiting for " +
                                          keyList(keys) + " (under " + options_.keyPrefix + ")");
    }
  }
}

// The watches start from now, and the keys are read once they run, so that no write in
// between is missed: a watch from a past revision would be an "unsynced" watcher, which costs
// etcd a scan of its history since that revision on each sync pass; thousands of waiting
// agents renewing theirs every few seconds kept 3 members busy with little else.
std::size_t EtcdStore::waitAny(const std::vector<std::string>& keys, Duration timeout, Duration slice,
                               const std::function<void()>& between) {
  if (keys.empty()) throw Error(ErrorCode::InvalidArgument, "waitAny needs at least one key");
  const auto deadline = Clock::now() + timeout;
  const std::vector<std::string> full = etcdKeys(keys);
  std::optional<std::size_t> found;
  const auto look = [&] {
    const RangeAllResult read = client().rangeAll(full);
    for (std::size_t index = 0; index < full.size() && !found; ++index) {
      if (read.kvs[index]) found = index;
    }
    return found.has_value();
  };
  if (timeout.count() <= 0) look();  // a look, without waiting
  while (!found && Clock::now() < deadline) {
    const auto left = std::chrono::ceil<Duration>(deadline - Clock::now());  // ceil: never short of the timeout
    const WatchMessage changed = client().watchKeys(full, left, StreamPacing{slice, between}, look);
    if (!found && (changed.canceled || !changed.events.empty())) look();
  }
  if (found) return *found;
  throw Error(ErrorCode::Timeout, "etcd: timed out after " + std::to_string(timeout.count()) +
                                      " ms waiting for any of " + keyList(keys) + " (under " + options_.keyPrefix +
                                      ")");
}

bool EtcdStore::deleteKey(const std::string& key) {
  if (!client().get(etcdKey(key))) return false;
  client().erase(etcdKey(key));
  return true;
}

std::int64_t EtcdStore::numKeys() {
  std::int64_t count = 0;
  for (const KeyValue& kv : client().getPrefix(options_.keyPrefix).kvs) {
    if (kv.key.rfind(lease_->noticePrefix(), 0) != 0) ++count;  // parked notices are not keys of the store
  }
  return count;
}

// One read for every key (kMaxTxnOps to a transaction); a wait only while some are missing.
std::vector<std::string> EtcdStore::multiGet(const std::vector<std::string>& keys, Duration timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::vector<std::string> full = etcdKeys(keys);
  for (;;) {
    const RangeAllResult read = client().rangeAll(full);
    if (std::all_of(read.kvs.begin(), read.kvs.end(), [](const auto& kv) { return kv.has_value(); })) {
      std::vector<std::string> values;
      values.reserve(keys.size());
      for (const std::optional<KeyValue>& kv : read.kvs) values.push_back(storedValue(*kv));
      return values;
    }
    wait(keys, std::max(Duration(0), std::chrono::ceil<Duration>(deadline - Clock::now())));
  }
}

void EtcdStore::multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  detail::requireOneValuePerKey(keys, values);
  client().putAll(etcdKeys(keys), values);
}

void EtcdStore::setEphemeral(const std::string& key, const std::string& value) {
  client().put(etcdKey(key), value, lease_->id());
  ephemeral_.push_back(etcdKey(key));
}

// Cleared or replaced, the parked notice is overwritten, never deleted: a DELETE with a
// notice in it means its owner's lease ended, and fires it.
void EtcdStore::setCloseNotice(const std::string& key, const std::string& value) {
  noticeTarget_ = key.empty() ? "" : etcdKey(key);
  noticeValue_ = key.empty() ? "" : value;
  client().put(noticeKey_, key.empty() ? "" : parkedNotice(noticeTarget_, noticeValue_), lease_->id());
}

// While the counter holds kCounterMarker, the put succeeds whatever else is written at the
// same time; a missing counter is created (the few that race to create it retry the put).
std::int64_t EtcdStore::increment(const std::string& key) {
  const std::string full = etcdKey(key);
  for (;;) {
    TxnResult put = client().increment(full);
    if (put.succeeded && put.prevKv) return put.prevKv->version + 1;
    if (!put.kvs.empty()) return add(key, 1);  // a counter written in decimal (add)
    if (client().create(full, kCounterMarker).succeeded) return 1;
  }
}

std::vector<std::string> EtcdStore::etcdKeys(const std::vector<std::string>& keys) const {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const std::string& key : keys) full.push_back(etcdKey(key));
  return full;
}

}  // namespace pltrun::etcd
