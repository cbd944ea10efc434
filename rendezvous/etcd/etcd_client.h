#pragma once
// A blocking client of etcd v3's JSON gateway over HTTP/1.1 (Boost.Beast): the calls the
// elastic rendezvous needs (range, put, compare-and-set transactions, delete, leases,
// watches), one keep-alive connection at a time (etcd_connection: http or https), failing
// over between the cluster's endpoints.
//
// Failover: a request that cannot be sent, times out, or meets a member without a leader
// (gRPC Unavailable) is tried on the next endpoint, once per endpoint; when none answers,
// Error(Network) names every endpoint and why. A write that timed out may still have been
// applied: callers read back what a retried transaction decided (its failure branch reads
// the key) rather than assume.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/etcd/etcd_codec.h"
#include "rendezvous/etcd/etcd_connection.h"
#include "rendezvous/etcd/etcd_options.h"

namespace pltrun::etcd {

class EtcdClient {
 public:
  /// Connects lazily: the first request finds a member that answers. With https, reads the
  /// CA and client certificate files now: Error(InvalidArgument) names one that cannot be used.
  explicit EtcdClient(EtcdClientOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  /// The key's value and revisions; empty when it does not exist.
  std::optional<KeyValue> get(const std::string& key);
  /// The key's value (if any) and the store's revision when it was read.
  RangeResult range(const std::string& key);
  /// Every key with `prefix`, in key order.
  RangeResult getPrefix(const std::string& prefix);
  /// Returns the store's revision after the put.
  std::int64_t put(const std::string& key, const std::string& value, std::int64_t lease = 0);
  /// Puts only if the key does not exist. succeeded false: kvs holds what is there.
  TxnResult create(const std::string& key, const std::string& value, std::int64_t lease = 0);
  /// Puts only if the key was last modified at `modRevision`. succeeded false: kvs holds what is there.
  TxnResult swap(const std::string& key, std::int64_t modRevision, const std::string& value, std::int64_t lease = 0);
  /// Adds one to the counter at `key` if it is one (succeeded: prevKv is the entry before);
  /// otherwise kvs holds what is there (nothing: a missing key).
  TxnResult increment(const std::string& key);
  /// Puts every key, kMaxTxnOps to a transaction.
  void putAll(const std::vector<std::string>& keys, const std::vector<std::string>& values);
  /// Reads every key, kMaxTxnOps to a transaction; revision: the oldest of those reads (a
  /// watch from the next one misses no change since).
  RangeAllResult rangeAll(const std::vector<std::string>& keys);
  std::int64_t erase(const std::string& key);
  std::int64_t erasePrefix(const std::string& prefix);

  LeaseGrant grantLease(std::int64_t ttlSeconds);
  /// Renews the lease once; returns its TTL, 0 when it has already expired.
  std::int64_t keepAlive(std::int64_t lease);
  /// Ends the lease now: every key attached to it is deleted.
  void revokeLease(std::int64_t lease);

  /// Waits up to `timeout` for a change of [key, rangeEnd) (the key alone when rangeEnd is
  /// empty) at `startRevision` or later, on a connection of its own; returns the first
  /// message with events, or a canceled one; an empty message when nothing changed in time.
  /// A member that fails mid-wait is replaced by the next, from the same revision.
  WatchMessage watch(const std::string& key, const std::string& rangeEnd, std::int64_t startRevision,
                     std::chrono::milliseconds timeout);
  /// As watch(), for DELETE events only (etcd filters out every PUT), running the pacing's
  /// `between` every slice while it waits.
  WatchMessage watchDeletes(const std::string& key, const std::string& rangeEnd, std::int64_t startRevision,
                            std::chrono::milliseconds timeout, const StreamPacing& pacing);
  /// Watches several single keys from now on, on one stream (a watch of each), running the
  /// pacing's `between` every slice while it waits. Once every watch runs, `whenWatching`
  /// is called; true ends the wait (an empty message is returned).
  WatchMessage watchKeys(const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
                         const StreamPacing& pacing, const std::function<bool()>& whenWatching);

  /// The endpoint that answered last ("host:port").
  std::string currentEndpoint() const;

 private:
  std::string call(const std::string& path, const std::string& body);
  std::string callOnce(const std::string& path, const std::string& body);
  void authenticate();
  void moveToNextEndpoint(std::string& failures, const std::string& reason);
  /// A watch stream of the create requests in `body`, until its first events.
  WatchMessage watchStream(const std::string& body, std::chrono::milliseconds timeout, const StreamPacing& pacing,
                           size_t watches = 1, const std::function<bool()>& whenWatching = {});

  EtcdClientOptions options_;
  std::unique_ptr<boost::asio::ssl::context> tls_;  ///< with https only; every connection's
  size_t current_ = 0;                              ///< index into options_.endpoints
  std::unique_ptr<EtcdConnection> connection_;
  std::string token_;  ///< etcd's auth token, when a user is given
};

}  // namespace pltrun::etcd
