#pragma once
// The key-value store every pltrun component meets through: the TCP client (which speaks
// PyTorch's TCPStore protocol, so it shares a store with PyTorch workers), an in-memory
// store for tests and single-process use, and a prefix decorator. All of them pass one
// conformance suite (tests/store/).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pltrun {

class Store {
 public:
  using Duration = std::chrono::milliseconds;

  virtual ~Store() = default;

  // The primitives, which every backend implements (as c10d's Store.hpp keeps set, get,
  // add, compareSet, check, wait, deleteKey and getNumKeys pure), and the composite
  // operations (append, multiGet, multiSet, increment, waitAny), written over the
  // primitives here (store.cc): a backend overrides one where it does better (one round
  // trip, one transaction, one lock). The order is the vtable's, kept as it was when every
  // operation was pure, so that the layout libpltrun exports has not changed.

  /// Sets `key` to `value` (any bytes).
  virtual void set(const std::string& key, const std::string& value) = 0;
  /// The value of `key`, waiting up to `timeout` for it to be set. Throws
  /// Error(Timeout) naming the key, the store and the time waited.
  virtual std::string get(const std::string& key, Duration timeout) = 0;
  /// Adds `delta` to the integer at `key` (missing counts as 0) and returns the result.
  /// The value is stored as decimal text, as PyTorch stores it.
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
  /// PyTorch's compare_set: sets `desired` if the current value equals `expected` (a
  /// missing key matches only an empty `expected`); returns the value now current (for
  /// a missing key and a non-empty `expected`: `expected`).
  virtual std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) = 0;
  /// Whether every key exists, without waiting.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  /// Waits up to `timeout` for every key to exist; throws Error(Timeout) naming them.
  virtual void wait(const std::vector<std::string>& keys, Duration timeout) = 0;
  /// Deletes `key`; false if it did not exist.
  virtual bool deleteKey(const std::string& key) = 0;
  /// Number of keys in the whole store.
  virtual std::int64_t numKeys() = 0;
  /// Appends `value` to the value of `key`, creating it when missing. By default a
  /// compare-and-set loop from the value read: not atomic when another client appends the
  /// same bytes at the same moment (compare_set's reply cannot tell that from success).
  virtual void append(const std::string& key, const std::string& value);
  /// Values of several keys, waiting up to `timeout` for all of them; throws
  /// Error(Timeout) naming the keys. By default a wait for all, then a get of each.
  virtual std::vector<std::string> multiGet(const std::vector<std::string>& keys, Duration timeout);
  /// Sets several keys at once; Error(InvalidArgument) unless there is one value per key.
  /// By default a set of each, in order.
  virtual void multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values);
  /// pltrun extension: sets `key`, which the store deletes when this client disconnects
  /// (or is destroyed), so peers learn at once that it is gone.
  virtual void setEphemeral(const std::string& key, const std::string& value) = 0;
  /// pltrun extension: when this client disconnects or is destroyed, the store sets `key`
  /// to `value` unless `key` exists by then, and wakes its waiters (so peers waiting on
  /// `key` learn at once that this client is gone, however it went). One per client: a
  /// later call replaces it, an empty key clears it.
  virtual void setCloseNotice(const std::string& key, const std::string& value) = 0;
  /// pltrun extension: add(key, 1), for a counter many clients take numbers from at once
  /// (an elastic round's slots). A backend may do it without contention: on etcd it is one
  /// put that never loses a race, where add is a compare-and-set that hundreds lose. The
  /// counter reads back as add(key, 0) and get(key) read any counter, on every backend.
  virtual std::int64_t increment(const std::string& key) { return add(key, 1); }
  /// pltrun extension: waits up to `timeout` until one of `keys` exists and returns the
  /// index of one that does (the lowest among those seen at once). While it waits it calls
  /// `between` (if set) at least every `slice`; `between` may throw to abandon the wait,
  /// which leaves the store usable. Throws Error(Timeout) naming the keys. A zero timeout
  /// looks once and waits for nothing (on etcd one request for all the keys). By default a
  /// wait on keys[0] of one slice, then a check of each other key, slice after slice; on
  /// etcd one watch of every key for the whole timeout, with `between` run locally, so
  /// that thousands of waiting agents cost the cluster nothing while they wait.
  virtual std::size_t waitAny(const std::vector<std::string>& keys, Duration timeout, Duration slice,
                              const std::function<void()>& between);

  /// The timeout used by the overloads without one.
  Duration timeout() const { return timeout_; }
  void setTimeout(Duration timeout) { timeout_ = timeout; }
  std::string get(const std::string& key) { return get(key, timeout_); }
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

 protected:
  explicit Store(Duration timeout = std::chrono::minutes(5)) : timeout_(timeout) {}

 private:
  Duration timeout_;
};

}  // namespace pltrun
