#pragma once
// pltrun's Store on etcd v3, so that the elastic rendezvous (written once, against Store)
// runs on a replicated cluster as it runs on the store an agent hosts:
//   - set/get/add/append/compareSet are puts and compare-and-set transactions (add and
//     append retry on a lost race: read, then swap at the revision read, so that unlike
//     Store's default append no other writer's equal bytes can pass for ours);
//   - multiGet is one read of every key, multiSet one transaction;
//   - get and wait watch the keys they wait for instead of polling;
//   - setEphemeral keys are attached to the process's lease (EtcdLease), and deleted when
//     their client goes;
//   - setCloseNotice parks {"key","value"} under the notice prefix, attached to the lease:
//     the client fires it itself when it is destroyed, and when the whole process dies its
//     lease expires and every other process's EtcdLease fires it.
// Every Store key K is the etcd key keyPrefix + K.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pltrun/store.h"
#include "rendezvous/etcd/etcd_client.h"
#include "rendezvous/etcd/etcd_lease.h"

namespace pltrun::etcd {

struct EtcdStoreOptions {
  EtcdClientOptions client;
  std::string keyPrefix = "/";
  std::string noticePrefix;  ///< empty: keyPrefix + "pltrun-notices/"
  /// Liveness of this process's ephemeral keys and close notices.
  std::chrono::seconds leaseTtl{10};
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  ///< Store::timeout()
};

class EtcdStore : public Store {
 public:
  /// Connects, grants the process's lease and starts its keep-alive. Throws Error(Network)
  /// naming every endpoint when none answers.
  explicit EtcdStore(EtcdStoreOptions options);
  /// Fires this client's close notice and deletes its ephemeral keys.
  ~EtcdStore() override;
  /// Another client (a connection of its own) on the same lease.
  std::unique_ptr<EtcdStore> connect() const;
  /// The process's lease: once it has expired, every request of every client on it fails.
  EtcdLease& lease() const { return *lease_; }

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Duration timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  bool deleteKey(const std::string& key) override;
  std::int64_t numKeys() override;
  void append(const std::string& key, const std::string& value) override;
  std::vector<std::string> multiGet(const std::vector<std::string>& keys, Duration timeout) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) override;
  void setEphemeral(const std::string& key, const std::string& value) override;
  void setCloseNotice(const std::string& key, const std::string& value) override;
  /// One put that never loses a race while the counter holds kCounterMarker (its count is
  /// the key's version); a counter that add() wrote in decimal is added to as add does.
  std::int64_t increment(const std::string& key) override;
  /// One read of every key; while none exists, one stream watching each of them from that
  /// read's revision, for the whole timeout (`between` runs on this thread, every slice).
  std::size_t waitAny(const std::vector<std::string>& keys, Duration timeout, Duration slice,
                      const std::function<void()>& between) override;

 private:
  EtcdStore(EtcdStoreOptions options, std::shared_ptr<EtcdLease> lease);
  /// The etcd client, once this process's lease is known to be alive.
  EtcdClient& client();
  std::string etcdKey(const std::string& key) const { return options_.keyPrefix + key; }
  std::vector<std::string> etcdKeys(const std::vector<std::string>& keys) const;
  /// Changes the value at `key` by `change` (missing: from empty) until no other writer
  /// raced it; returns the value written.
  std::string update(const std::string& key, const std::function<std::string(const std::string*)>& change);

  EtcdStoreOptions options_;
  std::shared_ptr<EtcdLease> lease_;
  EtcdClient client_;
  std::string noticeKey_;  ///< where this client parks its close notice
  std::string noticeTarget_, noticeValue_;
  std::vector<std::string> ephemeral_;
};

}  // namespace pltrun::etcd
