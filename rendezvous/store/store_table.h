#pragma once
// The key-value table behind the store: values, counters, compare-and-set with torch's
// exact semantics, waiters woken when keys appear, keys owned by a connection (ephemeral),
// a connection's close notice, and torch's queues (store_table_queues.cc). No I/O and no locking: the server calls it
// from its one event-loop thread, the in-memory store under its own mutex.

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/printable_key.h"
#include "base/stored_integer.h"

namespace pltrun::rdzv {

/// What the whole table may hold; unlimited by default (the in-memory store).
struct TableLimits {
  std::uint64_t maxValueSize = std::numeric_limits<std::uint64_t>::max();  ///< APPEND included
  /// Everything a client can make the table hold, as charged (store_costs.h): keys and
  /// values, queue items, parked requests and close notices, each with its fixed cost.
  std::uint64_t maxBytes = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t maxKeys = std::numeric_limits<std::uint64_t>::max();  ///< keys and queue items together
};

/// Thrown by a write that would take the table past its limits; nothing was changed.
struct TableFull : std::length_error {
  using std::length_error::length_error;
};

class StoreTable {
 public:
  using OwnerId = std::uint64_t;  ///< a connection; 0 means "nobody"
  using WaiterId = std::uint64_t;
  using Wakeup = std::function<void()>;

  explicit StoreTable(TableLimits limits = {}) : limits_(limits) {}
  const TableLimits& limits() const { return limits_; }
  /// What the table holds now, as charged against maxBytes (store_costs.h): every key and
  /// value, queue item, parked request (waiter) and close notice, each with its fixed cost.
  std::uint64_t bytes() const { return bytes_; }
  /// Keys and queue items held now, as counted against maxKeys.
  std::uint64_t itemsHeld() const { return entries_.size() + queueItems_; }
  /// bytes() counted again from what the table holds (a waiter at the charge it was
  /// given): equal to bytes() at every moment, which the tests and the fuzzer check.
  std::uint64_t recountBytes() const;

  /// Every write below, and every waiter and close notice, throws TableFull, changing
  /// nothing, when it would take the table past its limits (or a value past maxValueSize).

  /// Stores `value`; the key is no longer ephemeral.
  void set(const std::string& key, std::string value);
  /// Stores every pair, or (TableFull) none of them.
  void setMany(const std::vector<std::string>& keys, const std::vector<std::string>& values);
  /// Stores `value` as owned by `owner`: dropOwner(owner) deletes it.
  void setEphemeral(const std::string& key, std::string value, OwnerId owner);
  /// torch's COMPARE_SET: a missing key is created only when `expected` is empty (the
  /// reply is then `desired`; otherwise `expected` is returned and nothing changes); an
  /// existing key is replaced only when it equals `expected`. Returns the value now
  /// current, as torch's server replies.
  std::string compareSet(const std::string& key, const std::string& expected, std::string desired);
  /// torch's ADD: the value is decimal text; a missing key counts from 0. Throws
  /// std::invalid_argument when the current value is not an integer.
  std::int64_t add(const std::string& key, std::int64_t delta);
  /// Appends to the value, creating the key when missing.
  void append(const std::string& key, const std::string& suffix);
  std::optional<std::string> get(const std::string& key) const;
  /// The value of `key` without a copy; nullptr when it is missing. Valid until the next write.
  const std::string* peek(const std::string& key) const;
  bool contains(const std::string& key) const { return entries_.count(key) > 0; }
  bool containsAll(const std::vector<std::string>& keys) const;
  /// 1 when the key existed, else 0.
  std::int64_t erase(const std::string& key);
  std::int64_t size() const { return static_cast<std::int64_t>(entries_.size()); }
  /// Calls `visit(key)` for every key (not the queues), in no particular order.
  template <typename Visit>
  void forEachKey(Visit visit) const {
    for (const auto& entry : entries_) visit(entry.first);
  }

  /// Calls `wakeup` once every key of `keys` has existed since this call (keys that
  /// already exist count at once). Returns 0 and calls nothing if all exist now, in which
  /// case the caller proceeds directly; otherwise an id for cancelWaiter. The waiter is
  /// charged for the caller's copy of `keys` too (the parked request) until it fires or is
  /// cancelled. With
  /// `queueItemsCount` (torch's WAIT, which a blocking queue pop sends first), a queue that
  /// holds an item counts as an existing key, and each item pushed wakes one such waiter.
  WaiterId addWaiter(const std::vector<std::string>& keys, Wakeup wakeup, bool queueItemsCount = false);
  /// torch's BARRIER (2.8 and later): one more arrival at `key`, a decimal counter as ADD
  /// keeps it (std::invalid_argument when it holds something else). Returns 0 when the
  /// arrivals have reached `worldSize`: every waiter of this barrier is woken and the caller
  /// goes on at once. Otherwise an id for cancelWaiter; `wakeup` runs when the last arrives.
  WaiterId arriveAtBarrier(const std::string& key, std::int64_t worldSize, Wakeup wakeup);
  /// Forgets a waiter that has not fired (a cancelled wait, a closed connection).
  void cancelWaiter(WaiterId waiter);
  size_t waiterCount() const { return waiters_.size(); }

  /// Registers `owner`'s close notice: when dropOwner(owner) runs, `key` is set to `value`
  /// unless it exists by then (as compareSet(key, "", value), except that an existing key
  /// holding "" is kept too), waking the key's waiters. One notice per owner: a later call
  /// replaces the earlier one, an empty `key` clears it. Owner 0 ("nobody") never closes,
  /// so a notice for it is ignored. Charged until it is applied or cleared.
  void setCloseNotice(OwnerId owner, const std::string& key, std::string value);
  size_t closeNoticeCount() const { return closeNotices_.size(); }

  /// torch's queues (TCPStore.queue_push / queue_pop / queue_len, torch 2.7 and later):
  /// first-in first-out lists of values, named apart from the keys (GET, GETNUMKEYS and
  /// DELETE_KEY do not see them; CHECK and WAIT do). They are under the same limits as the
  /// keys: each item counts as a key, and is charged its bytes and fixed cost, as is the
  /// queue's name while it holds items.
  ///
  /// torch's blocking pop is two requests, WAIT on the queue's name then QUEUE_POP. A WAIT
  /// answered because of an item is promised that item until the connection's next
  /// request: other waits do not count it, so two blocked pops never both wake for one
  /// item and one of them find the queue empty (as they can with torch's own server).

  /// Appends `value` (TableFull: nothing changed) and wakes the longest-waiting WAIT that
  /// this item completes: one blocked pop per item.
  void queuePush(const std::string& queue, std::string value);
  struct Popped {
    std::int64_t lengthBefore = 0;  ///< what torch's server replies first; 0: nothing popped
    std::string value;
  };
  /// Removes the oldest item for `owner`: the one promised to it, else one promised to
  /// nobody (none: lengthBefore 0). Ends the owner's promises.
  Popped queuePop(const std::string& queue, OwnerId owner = 0);
  std::int64_t queueLength(const std::string& queue) const;
  /// Whether every key exists or names a queue with an item not promised to anyone: what
  /// CHECK answers and WAIT waits for.
  bool readyAll(const std::vector<std::string>& keys) const;
  /// A WAIT of `owner` on `keys` has been answered: each key that was ready only through
  /// its queue's items gets one of them promised to the owner.
  void promiseQueueItems(OwnerId owner, const std::vector<std::string>& keys);
  /// The owner sent something other than the QUEUE_POP its promise was for, or left: its
  /// items are free again, and wake other waiters.
  void endPromises(OwnerId owner);
  /// A WAIT that may have been woken by an item gave up (cancelled, or its connection
  /// closed): the item wakes the next waiter instead.
  void passOnQueueItems(const std::vector<std::string>& keys);
  /// Connections holding a promised item (0 once all have closed).
  size_t queuePromiseHolders() const { return promisesByOwner_.size(); }

  /// The owner's connection has closed: deletes every key `owner` wrote with setEphemeral
  /// and still owns, then applies its close notice (so a notice may name one of those
  /// keys), and forgets the owner.
  void dropOwner(OwnerId owner);

 private:
  struct Entry {
    std::string value;
    OwnerId owner = 0;
  };
  struct CloseNotice {
    std::string key;
    std::string value;
  };
  struct Waiter {
    std::vector<std::string> missingKeys;  ///< to unregister a cancelled waiter
    size_t missing = 0;
    Wakeup wakeup;
    bool queueItemsCount = false;
    std::uint64_t cost = 0;  ///< charged to bytes_ while it waits
  };

  /// Stores and wakes the waiters the new key completes; within the limits unless
  /// `checked` is false (a close notice: one small value per connection, and the news of
  /// a lost connection must get through).
  void store(const std::string& key, std::string value, OwnerId owner, bool checked = true);
  /// Throws TableFull when a value of `size` bytes for `key` is over maxValueSize.
  void checkValueSize(const std::string& key, std::uint64_t size) const;
  /// Whether the table may hold `items` keys and queue items of `bytes` bytes in all.
  bool fits(std::uint64_t items, std::uint64_t bytes) const {
    return items <= limits_.maxKeys && bytes <= limits_.maxBytes;
  }
  /// Throws TableFull for `subject`, which would leave the table with `items` keys and
  /// queue items (saying which limit it passes).
  [[noreturn]] void refuse(const std::string& subject, std::uint64_t items) const;
  /// Charges `cost` more bytes, or throws TableFull for `subject` when they do not fit.
  void charge(const std::string& subject, std::uint64_t cost);
  /// Makes `owner` the entry's owner (0: nobody), keeping ownedKeys_ to the keys it owns.
  void changeOwner(std::pair<const std::string, Entry>& entry, OwnerId owner);
  void disown(OwnerId owner, const std::string& key);
  /// Forgets a waiter that fired or gave up, and its charge.
  void releaseWaiter(std::unordered_map<WaiterId, Waiter>::iterator waiter);
  void releaseCloseNotice(std::unordered_map<OwnerId, CloseNotice>::iterator notice);
  void checkRoomForAll(const std::vector<std::string>& keys, const std::vector<std::string>& values) const;
  void forget(std::unordered_map<std::string, Entry>::iterator entry);
  void keyAppeared(const std::string& key);
  /// Wakes the first waiter that `queue`'s new item completes (queueItemsCount waiters only).
  void queueItemArrived(const std::string& queue);
  /// Items of `queue` not promised to a connection.
  std::uint64_t unpromisedItems(const std::string& queue) const;

  TableLimits limits_;
  std::uint64_t bytes_ = 0;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<OwnerId, std::unordered_set<std::string>> ownedKeys_;
  std::unordered_map<OwnerId, CloseNotice> closeNotices_;
  std::unordered_map<WaiterId, Waiter> waiters_;
  std::unordered_map<std::string, std::vector<WaiterId>> waitersByKey_;
  /// Only queues that hold items: an emptied queue is forgotten.
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  std::uint64_t queueItems_ = 0;                                  ///< items in all queues
  std::unordered_map<std::string, std::uint64_t> promisedItems_;  ///< by queue; never 0
  std::unordered_map<OwnerId, std::vector<std::string>> promisesByOwner_;
  WaiterId nextWaiter_ = 1;
};

}  // namespace pltrun::rdzv
