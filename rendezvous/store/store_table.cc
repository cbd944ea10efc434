#include "rendezvous/store/store_table.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "base/terminal_text.h"
#include "rendezvous/store/store_costs.h"

namespace pltrun::rdzv {

void StoreTable::checkValueSize(const std::string& key, std::uint64_t size) const {
  if (size > limits_.maxValueSize) {
    throw TableFull("a value of " + std::to_string(size) + " bytes for key " + printableKey(key) +
                    " is over the limit of " + std::to_string(limits_.maxValueSize));
  }
}

void StoreTable::refuse(const std::string& subject, std::uint64_t items) const {
  if (items > limits_.maxKeys) {
    throw TableFull(subject + " would pass the store's limit of " + std::to_string(limits_.maxKeys) + " keys");
  }
  throw TableFull(subject + " would take the store past its limit of " + std::to_string(limits_.maxBytes) + " bytes");
}

void StoreTable::charge(const std::string& subject, std::uint64_t cost) {
  if (!fits(itemsHeld(), bytes_ + cost)) refuse(subject, itemsHeld());
  bytes_ += cost;
}

void StoreTable::checkRoomForAll(const std::vector<std::string>& keys, const std::vector<std::string>& values) const {
  // What the table would hold afterwards: each key once, with its last value.
  std::unordered_map<std::string_view, size_t> lastIndex;
  for (size_t i = 0; i < keys.size(); ++i) {
    checkValueSize(keys[i], values[i].size());
    lastIndex[keys[i]] = i;
  }
  std::uint64_t keysAfter = itemsHeld(), bytesAfter = bytes_;
  for (const auto& [key, index] : lastIndex) {
    auto found = entries_.find(keys[index]);
    if (found == entries_.end()) {
      ++keysAfter;
    } else {
      bytesAfter -= cost::ofKey(found->first, found->second.value.size(), found->second.owner != 0);
    }
    bytesAfter += cost::ofKey(keys[index], values[index].size(), false);
  }
  if (!fits(keysAfter, bytesAfter)) refuse("a MULTI_SET of " + std::to_string(keys.size()) + " keys", keysAfter);
}

void StoreTable::forget(std::unordered_map<std::string, Entry>::iterator entry) {
  bytes_ -= cost::ofKey(entry->first, entry->second.value.size(), entry->second.owner != 0);
  if (entry->second.owner != 0) disown(entry->second.owner, entry->first);
  entries_.erase(entry);
}

void StoreTable::disown(OwnerId owner, const std::string& key) {
  auto owned = ownedKeys_.find(owner);
  if (owned == ownedKeys_.end()) return;
  owned->second.erase(key);
  if (owned->second.empty()) ownedKeys_.erase(owned);
}

// An ephemeral key written over by anyone else is no longer its connection's: the
// connection's set of owned keys drops it at once, or SET_EPHEMERAL then SET of ever new
// keys would grow that set, uncharged, for as long as the connection lives.
void StoreTable::changeOwner(std::pair<const std::string, Entry>& entry, OwnerId owner) {
  const OwnerId old = entry.second.owner;
  if (old == owner) return;
  if (old != 0) disown(old, entry.first);
  if (owner != 0) ownedKeys_[owner].insert(entry.first);
  entry.second.owner = owner;
}

void StoreTable::store(const std::string& key, std::string value, OwnerId owner, bool checked) {
  auto [entry, created] = entries_.try_emplace(key);  // one lookup: a refused new key is erased again
  const std::uint64_t oldCost = created ? 0 : cost::ofKey(key, entry->second.value.size(), entry->second.owner != 0);
  const std::uint64_t bytesAfter = bytes_ - oldCost + cost::ofKey(key, value.size(), owner != 0);
  if (checked) {
    try {
      checkValueSize(key, value.size());
      if (!fits(itemsHeld(), bytesAfter)) refuse("key " + printableKey(key), itemsHeld());
    } catch (const TableFull&) {
      if (created) entries_.erase(entry);
      throw;
    }
  }
  bytes_ = bytesAfter;
  entry->second.value = std::move(value);
  changeOwner(*entry, owner);
  if (created) keyAppeared(key);
}

void StoreTable::keyAppeared(const std::string& key) {
  auto found = waitersByKey_.find(key);
  if (found == waitersByKey_.end()) return;
  std::vector<WaiterId> ids = std::move(found->second);
  waitersByKey_.erase(found);
  // Wake after the bookkeeping: a wakeup may call back into the table.
  std::vector<Wakeup> ready;
  for (WaiterId id : ids) {
    auto waiter = waiters_.find(id);
    if (waiter == waiters_.end() || --waiter->second.missing > 0) continue;
    ready.push_back(std::move(waiter->second.wakeup));
    releaseWaiter(waiter);
  }
  for (Wakeup& wakeup : ready) wakeup();
}

void StoreTable::set(const std::string& key, std::string value) { store(key, std::move(value), 0); }

void StoreTable::setMany(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  checkRoomForAll(keys, values);
  for (size_t i = 0; i < keys.size(); ++i) store(keys[i], values[i], 0, false);
}

void StoreTable::setEphemeral(const std::string& key, std::string value, OwnerId owner) {
  store(key, std::move(value), owner);
}

std::string StoreTable::compareSet(const std::string& key, const std::string& expected, std::string desired) {
  auto found = entries_.find(key);
  if (found == entries_.end()) {
    if (!expected.empty()) return expected;
    store(key, desired, 0);
    return desired;
  }
  if (found->second.value != expected) return found->second.value;
  checkValueSize(key, desired.size());
  const std::uint64_t bytesAfter = bytes_ - cost::ofKey(key, found->second.value.size(), found->second.owner != 0) +
                                   cost::ofKey(key, desired.size(), false);
  if (!fits(itemsHeld(), bytesAfter)) refuse("key " + printableKey(key), itemsHeld());
  bytes_ = bytesAfter;
  found->second.value = desired;
  changeOwner(*found, 0);
  return desired;
}

std::int64_t StoreTable::add(const std::string& key, std::int64_t delta) {
  auto found = entries_.find(key);
  const std::int64_t result = addToStoredInteger(key, found != entries_.end() ? &found->second.value : nullptr, delta);
  store(key, std::to_string(result), 0);
  return result;
}

void StoreTable::append(const std::string& key, const std::string& suffix) {
  auto found = entries_.find(key);
  if (found == entries_.end()) {
    store(key, suffix, 0);
    return;
  }
  checkValueSize(key, found->second.value.size() + suffix.size());
  const std::uint64_t size = found->second.value.size();
  const std::uint64_t bytesAfter =
      bytes_ - cost::ofKey(key, size, found->second.owner != 0) + cost::ofKey(key, size + suffix.size(), false);
  if (!fits(itemsHeld(), bytesAfter)) refuse("key " + printableKey(key), itemsHeld());
  bytes_ = bytesAfter;
  found->second.value += suffix;
  changeOwner(*found, 0);  // like any other write from another client: the key is no longer ephemeral
}

std::optional<std::string> StoreTable::get(const std::string& key) const {
  auto found = entries_.find(key);
  if (found == entries_.end()) return std::nullopt;
  return found->second.value;
}

bool StoreTable::containsAll(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [this](const std::string& key) { return contains(key); });
}

const std::string* StoreTable::peek(const std::string& key) const {
  auto found = entries_.find(key);
  return found == entries_.end() ? nullptr : &found->second.value;
}

std::int64_t StoreTable::erase(const std::string& key) {
  auto found = entries_.find(key);
  if (found == entries_.end()) return 0;
  forget(found);
  return 1;
}

StoreTable::WaiterId StoreTable::addWaiter(const std::vector<std::string>& keys, Wakeup wakeup, bool queueItemsCount) {
  // The missing keys, each once, found without copying them (a wait may name megabytes).
  std::vector<const std::string*> missing;
  for (const std::string& key : keys) {
    if (!contains(key) && !(queueItemsCount && unpromisedItems(key) > 0)) missing.push_back(&key);
  }
  if (missing.empty()) return 0;
  auto byValue = [](const std::string* left, const std::string* right) { return *left < *right; };
  auto same = [](const std::string* left, const std::string* right) { return *left == *right; };
  std::sort(missing.begin(), missing.end(), byValue);
  missing.erase(std::unique(missing.begin(), missing.end(), same), missing.end());
  const std::uint64_t cost = cost::ofWaiter(keys);
  charge("a wait on " + std::to_string(keys.size()) + " key(s)", cost);
  WaiterId id = nextWaiter_++;
  Waiter& waiter = waiters_[id];
  waiter.missingKeys.reserve(missing.size());
  for (const std::string* key : missing) {
    waitersByKey_[*key].push_back(id);
    waiter.missingKeys.push_back(*key);
  }
  waiter.missing = missing.size();
  waiter.wakeup = std::move(wakeup);
  waiter.queueItemsCount = queueItemsCount;
  waiter.cost = cost;
  return id;
}

StoreTable::WaiterId StoreTable::arriveAtBarrier(const std::string& key, std::int64_t worldSize, Wakeup wakeup) {
  // Room for the waiter, and for a new counter of 20 digits, before the arrival counts:
  // a refused arrival changes nothing.
  const std::uint64_t waiterCost = cost::ofWaiter({key});
  const std::uint64_t counterCost = contains(key) ? 0 : cost::ofKey(key, 20, false);
  if (!fits(itemsHeld() + (counterCost != 0 ? 1 : 0), bytes_ + waiterCost + counterCost)) {
    refuse("a barrier arrival at key " + printableKey(key), itemsHeld() + (counterCost != 0 ? 1 : 0));
  }
  if (add(key, 1) >= worldSize) {
    keyAppeared(key);  // releases the waiters registered below by the earlier arrivals
    return 0;
  }
  // Registered on a key that exists: only the last arrival's keyAppeared wakes it (as
  // torch's server, a later re-creation of the key after a delete would too).
  WaiterId id = nextWaiter_++;
  waitersByKey_[key].push_back(id);
  waiters_[id] = Waiter{{key}, 1, std::move(wakeup), false, waiterCost};
  bytes_ += waiterCost;
  return id;
}

void StoreTable::cancelWaiter(WaiterId waiter) {
  auto found = waiters_.find(waiter);
  if (found == waiters_.end()) return;
  for (const std::string& key : found->second.missingKeys) {
    auto byKey = waitersByKey_.find(key);
    if (byKey == waitersByKey_.end()) continue;
    auto& ids = byKey->second;
    ids.erase(std::remove(ids.begin(), ids.end(), waiter), ids.end());
    if (ids.empty()) waitersByKey_.erase(byKey);
  }
  releaseWaiter(found);
}

std::uint64_t StoreTable::recountBytes() const {
  std::uint64_t total = 0;
  for (const auto& [key, entry] : entries_) total += cost::ofKey(key, entry.value.size(), entry.owner != 0);
  for (const auto& [queue, items] : queues_) {
    total += cost::kQueue + queue.size();
    for (const std::string& item : items) total += cost::kQueueItem + item.size();
  }
  for (const auto& [id, waiter] : waiters_) total += waiter.cost;
  for (const auto& [owner, notice] : closeNotices_)
    total += cost::kCloseNotice + notice.key.size() + notice.value.size();
  return total;
}

void StoreTable::releaseWaiter(std::unordered_map<WaiterId, Waiter>::iterator waiter) {
  bytes_ -= waiter->second.cost;
  waiters_.erase(waiter);
}

void StoreTable::releaseCloseNotice(std::unordered_map<OwnerId, CloseNotice>::iterator notice) {
  bytes_ -= cost::kCloseNotice + notice->second.key.size() + notice->second.value.size();
  closeNotices_.erase(notice);
}

void StoreTable::setCloseNotice(OwnerId owner, const std::string& key, std::string value) {
  if (owner == 0) return;
  auto old = closeNotices_.find(owner);
  const std::uint64_t oldCost =
      old == closeNotices_.end() ? 0 : cost::kCloseNotice + old->second.key.size() + old->second.value.size();
  if (key.empty()) {
    if (old != closeNotices_.end()) releaseCloseNotice(old);
    return;
  }
  checkValueSize(key, value.size());
  const std::uint64_t bytesAfter = bytes_ - oldCost + cost::kCloseNotice + key.size() + value.size();
  if (!fits(itemsHeld(), bytesAfter)) refuse("the close notice for key " + printableKey(key), itemsHeld());
  bytes_ = bytesAfter;
  closeNotices_[owner] = CloseNotice{key, std::move(value)};
}

void StoreTable::dropOwner(OwnerId owner) {
  endPromises(owner);
  auto found = ownedKeys_.find(owner);
  if (found != ownedKeys_.end()) {
    const std::unordered_set<std::string> keys = std::move(found->second);
    ownedKeys_.erase(found);
    for (const std::string& key : keys) {
      auto entry = entries_.find(key);
      if (entry != entries_.end() && entry->second.owner == owner) forget(entry);
    }
  }
  auto notice = closeNotices_.find(owner);
  if (notice == closeNotices_.end()) return;
  // Forgotten before it is applied: the wakeups it causes may call back into the table.
  // Its charge passes to the key it sets.
  CloseNotice applied = std::move(notice->second);
  bytes_ -= cost::kCloseNotice + applied.key.size() + applied.value.size();
  closeNotices_.erase(notice);
  // Like compareSet(key, "", value), except that an existing key holding "" is kept too.
  if (!contains(applied.key)) store(applied.key, std::move(applied.value), 0, /*checked=*/false);
}

}  // namespace pltrun::rdzv
