#include "rendezvous/store/store_table.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "base/terminal_text.h"

namespace pltrun::rdzv {

void StoreTable::checkValueSize(const std::string& key, std::uint64_t size) const {
  if (size > limits_.maxValueSize) {
    throw TableFull("a value of " + std::to_string(size) + " bytes for key " + printableKey(key) +
                    " is over the limit of " + std::to_string(limits_.maxValueSize));
  }
}

void StoreTable::refuse(const std::string& subject, std::uint64_t keys) const {
  if (keys + queues_.size() > limits_.maxKeys) {
    throw TableFull(subject + " would pass the store's limit of " + std::to_string(limits_.maxKeys) + " keys");
  }
  throw TableFull(subject + " would take the store past its limit of " + std::to_string(limits_.maxBytes) + " bytes");
}

void StoreTable::checkRoomForAll(const std::vector<std::string>& keys, const std::vector<std::string>& values) const {
  // What the table would hold afterwards: each key once, with its last value.
  std::unordered_map<std::string_view, size_t> lastIndex;
  for (size_t i = 0; i < keys.size(); ++i) {
    checkValueSize(keys[i], values[i].size());
    lastIndex[keys[i]] = i;
  }
  std::uint64_t keysAfter = entries_.size(), bytesAfter = bytes_;
  for (const auto& [key, index] : lastIndex) {
    auto found = entries_.find(keys[index]);
    if (found == entries_.end()) {
      ++keysAfter;
      bytesAfter += key.size() + values[index].size();
    } else {
      bytesAfter += values[index].size() - found->second.value.size();
    }
  }
  if (!fits(keysAfter, bytesAfter)) refuse("a MULTI_SET of " + std::to_string(keys.size()) + " keys", keysAfter);
}

void StoreTable::forget(std::unordered_map<std::string, Entry>::iterator entry) {
  bytes_ -= entry->first.size() + entry->second.value.size();
  entries_.erase(entry);
}

void StoreTable::store(const std::string& key, std::string value, OwnerId owner, bool checked) {
  auto [entry, created] = entries_.try_emplace(key);  // one lookup: a refused new key is erased again
  const std::uint64_t oldBytes = created ? 0 : key.size() + entry->second.value.size();
  const std::uint64_t bytesAfter = bytes_ - oldBytes + key.size() + value.size();
  if (checked) {
    try {
      checkValueSize(key, value.size());
      if (!fits(entries_.size(), bytesAfter)) refuse("key " + printableKey(key), entries_.size());
    } catch (const TableFull&) {
      if (created) entries_.erase(entry);
      throw;
    }
  }
  bytes_ = bytesAfter;
  entry->second.value = std::move(value);
  entry->second.owner = owner;
  if (owner != 0) ownedKeys_[owner].insert(key);
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
    waiters_.erase(waiter);
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
  const std::uint64_t bytesAfter = bytes_ - found->second.value.size() + desired.size();
  if (!fits(entries_.size(), bytesAfter)) refuse("key " + printableKey(key), entries_.size());
  bytes_ = bytesAfter;
  found->second.value = desired;
  found->second.owner = 0;
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
  if (!fits(entries_.size(), bytes_ + suffix.size())) refuse("key " + printableKey(key), entries_.size());
  bytes_ += suffix.size();
  found->second.value += suffix;
  found->second.owner = 0;  // like any other write from another client: the key is no longer ephemeral
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
  std::set<std::string> missing;
  for (const std::string& key : keys) {
    if (!contains(key) && !(queueItemsCount && unpromisedItems(key) > 0)) missing.insert(key);
  }
  if (missing.empty()) return 0;
  WaiterId id = nextWaiter_++;
  for (const std::string& key : missing) waitersByKey_[key].push_back(id);
  waiters_[id] = Waiter{std::vector<std::string>(missing.begin(), missing.end()), missing.size(), std::move(wakeup),
                        queueItemsCount};
  return id;
}

StoreTable::WaiterId StoreTable::arriveAtBarrier(const std::string& key, std::int64_t worldSize, Wakeup wakeup) {
  if (add(key, 1) >= worldSize) {
    keyAppeared(key);  // releases the waiters registered below by the earlier arrivals
    return 0;
  }
  // Registered on a key that exists: only the last arrival's keyAppeared wakes it (as
  // torch's server, a later re-creation of the key after a delete would too).
  WaiterId id = nextWaiter_++;
  waitersByKey_[key].push_back(id);
  waiters_[id] = Waiter{{key}, 1, std::move(wakeup)};
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
  waiters_.erase(found);
}

void StoreTable::setCloseNotice(OwnerId owner, const std::string& key, std::string value) {
  if (owner == 0) return;
  if (key.empty()) {
    closeNotices_.erase(owner);
    return;
  }
  closeNotices_[owner] = CloseNotice{key, std::move(value)};
}

void StoreTable::dropOwner(OwnerId owner) {
  endPromises(owner);
  auto found = ownedKeys_.find(owner);
  if (found != ownedKeys_.end()) {
    for (const std::string& key : found->second) {
      auto entry = entries_.find(key);
      if (entry != entries_.end() && entry->second.owner == owner) forget(entry);
    }
    ownedKeys_.erase(found);
  }
  auto notice = closeNotices_.find(owner);
  if (notice == closeNotices_.end()) return;
  // Forgotten before it is applied: the wakeups it causes may call back into the table.
  CloseNotice applied = std::move(notice->second);
  closeNotices_.erase(notice);
  // Like compareSet(key, "", value), except that an existing key holding "" is kept too.
  if (!contains(applied.key)) store(applied.key, std::move(applied.value), 0, /*checked=*/false);
}

}  // namespace pltrun::rdzv
