// torch's queues in the store's table (TCPStore.queue_push / queue_pop / queue_len, torch
// 2.7 and later; docs/TCPSTORE_PROTOCOL.md): a blocking pop is a WAIT on the queue's name,
// then a QUEUE_POP, so each pushed item wakes exactly one waiting WAIT, and the item is
// promised to the WAIT it answered until that connection's next request. Waking every
// waiter, or letting two WAITs count one item, would answer several blocked pops for one
// item and leave all but one popping an empty queue (torch's client raises "queue is
// empty" then).

#include <algorithm>

#include "rendezvous/store/store_costs.h"
#include "rendezvous/store/store_table.h"

namespace pltrun::rdzv {

void StoreTable::queuePush(const std::string& queue, std::string value) {
  checkValueSize(queue, value.size());
  auto found = queues_.find(queue);
  const bool created = found == queues_.end();
  // Each item is one more key, even an empty one: it costs the store memory all the same.
  const std::uint64_t bytesAfter =
      bytes_ + cost::kQueueItem + value.size() + (created ? cost::kQueue + queue.size() : 0);
  if (!fits(itemsHeld() + 1, bytesAfter)) refuse("an item of queue " + printableKey(queue), itemsHeld() + 1);
  if (created) found = queues_.try_emplace(queue).first;
  found->second.push_back(std::move(value));
  ++queueItems_;
  bytes_ = bytesAfter;
  queueItemArrived(queue);
}

StoreTable::Popped StoreTable::queuePop(const std::string& queue, OwnerId owner) {
  // The owner's own promise for this queue, if it holds one; its other promises end.
  bool promised = false;
  auto promises = promisesByOwner_.find(owner);
  if (promises != promisesByOwner_.end()) {
    auto mine = std::find(promises->second.begin(), promises->second.end(), queue);
    if (mine != promises->second.end()) {
      promises->second.erase(mine);
      if (--promisedItems_[queue] == 0) promisedItems_.erase(queue);
      promised = true;
    }
    endPromises(owner);
  }
  auto found = queues_.find(queue);
  if (found == queues_.end() || (!promised && unpromisedItems(queue) == 0)) return {};
  Popped popped{static_cast<std::int64_t>(found->second.size()), std::move(found->second.front())};
  found->second.pop_front();
  --queueItems_;
  bytes_ -= cost::kQueueItem + popped.value.size();
  if (found->second.empty()) {
    bytes_ -= cost::kQueue + queue.size();
    queues_.erase(found);
  }
  return popped;
}

std::int64_t StoreTable::queueLength(const std::string& queue) const {
  auto found = queues_.find(queue);
  return found == queues_.end() ? 0 : static_cast<std::int64_t>(found->second.size());
}

std::uint64_t StoreTable::unpromisedItems(const std::string& queue) const {
  auto found = queues_.find(queue);
  if (found == queues_.end()) return 0;
  auto promised = promisedItems_.find(queue);
  const std::uint64_t taken = promised == promisedItems_.end() ? 0 : promised->second;
  return found->second.size() > taken ? found->second.size() - taken : 0;
}

bool StoreTable::readyAll(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(),
                     [this](const std::string& key) { return contains(key) || unpromisedItems(key) > 0; });
}

void StoreTable::promiseQueueItems(OwnerId owner, const std::vector<std::string>& keys) {
  if (owner == 0) return;  // nobody: no connection whose next request ends the promise
  for (const std::string& key : keys) {
    if (contains(key) || unpromisedItems(key) == 0) continue;
    ++promisedItems_[key];
    promisesByOwner_[owner].push_back(key);
  }
}

void StoreTable::endPromises(OwnerId owner) {
  auto found = promisesByOwner_.find(owner);
  if (found == promisesByOwner_.end()) return;
  std::vector<std::string> queues = std::move(found->second);
  promisesByOwner_.erase(found);
  for (const std::string& queue : queues) {
    if (--promisedItems_[queue] == 0) promisedItems_.erase(queue);
  }
  passOnQueueItems(queues);
}

void StoreTable::passOnQueueItems(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    if (unpromisedItems(key) > 0) queueItemArrived(key);
  }
}

void StoreTable::queueItemArrived(const std::string& queue) {
  auto byKey = waitersByKey_.find(queue);
  if (byKey == waitersByKey_.end()) return;
  std::vector<WaiterId>& ids = byKey->second;
  // In the order they began to wait. A waiter that still misses other keys takes its
  // share of the news (this key is no longer missing for it) without using up the item.
  for (auto id = ids.begin(); id != ids.end();) {
    auto waiter = waiters_.find(*id);
    if (waiter == waiters_.end() || !waiter->second.queueItemsCount) {
      ++id;
      continue;
    }
    id = ids.erase(id);
    if (--waiter->second.missing > 0) continue;
    Wakeup wakeup = std::move(waiter->second.wakeup);
    releaseWaiter(waiter);
    if (ids.empty()) waitersByKey_.erase(byKey);
    wakeup();  // last: it may call back into the table
    return;
  }
  if (ids.empty()) waitersByKey_.erase(byKey);
}

}  // namespace pltrun::rdzv
