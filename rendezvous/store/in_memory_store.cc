#include "pltrun/in_memory_store.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "rendezvous/store/socket_stream.h"
#include "rendezvous/store/store_errors.h"
#include "rendezvous/store/store_table.h"

namespace pltrun {

struct InMemoryStore::Shared {
  std::mutex mutex;
  std::condition_variable changed;
  rdzv::StoreTable table;
  std::atomic<std::uint64_t> nextOwner{1};
};

namespace {
constexpr const char* kName = "the in-memory store";
}

InMemoryStore::InMemoryStore() : InMemoryStore(std::make_shared<Shared>()) {}

InMemoryStore::InMemoryStore(std::shared_ptr<Shared> shared)
    : shared_(std::move(shared)), owner_(shared_->nextOwner++) {}

InMemoryStore::~InMemoryStore() {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->table.dropOwner(owner_);  // its ephemeral keys go, then its close notice fires
}

std::unique_ptr<InMemoryStore> InMemoryStore::connect() const {
  auto handle = std::unique_ptr<InMemoryStore>(new InMemoryStore(shared_));
  handle->setTimeout(timeout());
  return handle;
}

void InMemoryStore::set(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->table.set(key, value);
}

void InMemoryStore::setEphemeral(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->table.setEphemeral(key, value, owner_);
}

void InMemoryStore::setCloseNotice(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->table.setCloseNotice(owner_, key, value);
}

std::string InMemoryStore::get(const std::string& key, Duration timeout) { return multiGet({key}, timeout).front(); }

std::int64_t InMemoryStore::add(const std::string& key, std::int64_t delta) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  try {
    return shared_->table.add(key, delta);
  } catch (const std::invalid_argument& error) {
    throw Error(ErrorCode::InvalidArgument, error.what());
  }
}

std::string InMemoryStore::compareSet(const std::string& key, const std::string& expected, const std::string& desired) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->table.compareSet(key, expected, desired);
}

bool InMemoryStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->table.containsAll(keys);
}

void InMemoryStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  bool ready = false;
  // The wakeup runs in whichever thread sets the last key, under the same mutex.
  auto waiter = shared_->table.addWaiter(keys, [&] {
    ready = true;
    shared_->changed.notify_all();
  });
  if (waiter == 0) return;
  // wait_until with a saturated deadline: a "forever" timeout must not overflow.
  if (!shared_->changed.wait_until(lock, detail::deadlineAfter(timeout), [&] { return ready; })) {
    shared_->table.cancelWaiter(waiter);
    throw detail::waitTimeout(keys, kName, timeout);
  }
}

bool InMemoryStore::deleteKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->table.erase(key) > 0;
}

std::int64_t InMemoryStore::numKeys() {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->table.size();
}

void InMemoryStore::append(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->table.append(key, value);
}

std::vector<std::string> InMemoryStore::multiGet(const std::vector<std::string>& keys, Duration timeout) {
  wait(keys, timeout);
  std::lock_guard<std::mutex> lock(shared_->mutex);
  std::vector<std::string> values;
  for (const std::string& key : keys) {
    auto value = shared_->table.get(key);
    // Deleted between the wait and the read: report it like a wait that never ended.
    if (!value) throw detail::waitTimeout({key}, kName, timeout);
    values.push_back(std::move(*value));
  }
  return values;
}

void InMemoryStore::multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  detail::requireOneValuePerKey(keys, values);
  std::lock_guard<std::mutex> lock(shared_->mutex);
  for (size_t index = 0; index < keys.size(); ++index) shared_->table.set(keys[index], values[index]);
}

}  // namespace pltrun
