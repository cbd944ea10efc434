#include "pltrun/prefix_store.h"

namespace pltrun {

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : Store(store->timeout()), prefix_(std::move(prefix)), store_(std::move(store)) {}

std::vector<std::string> PrefixStore::prefixed(const std::vector<std::string>& keys) const {
  std::vector<std::string> result;
  result.reserve(keys.size());
  for (const std::string& key : keys) result.push_back(prefixed(key));
  return result;
}

void PrefixStore::set(const std::string& key, const std::string& value) { store_->set(prefixed(key), value); }
std::string PrefixStore::get(const std::string& key, Duration timeout) { return store_->get(prefixed(key), timeout); }
std::int64_t PrefixStore::add(const std::string& key, std::int64_t delta) { return store_->add(prefixed(key), delta); }

std::int64_t PrefixStore::increment(const std::string& key) { return store_->increment(prefixed(key)); }
std::size_t PrefixStore::waitAny(const std::vector<std::string>& keys, Duration timeout, Duration slice,
                                 const std::function<void()>& between) {
  return store_->waitAny(prefixed(keys), timeout, slice, between);
}
std::string PrefixStore::compareSet(const std::string& key, const std::string& expected, const std::string& desired) {
  return store_->compareSet(prefixed(key), expected, desired);
}
bool PrefixStore::check(const std::vector<std::string>& keys) { return store_->check(prefixed(keys)); }
void PrefixStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  store_->wait(prefixed(keys), timeout);
}
bool PrefixStore::deleteKey(const std::string& key) { return store_->deleteKey(prefixed(key)); }
std::int64_t PrefixStore::numKeys() { return store_->numKeys(); }
void PrefixStore::append(const std::string& key, const std::string& value) { store_->append(prefixed(key), value); }
std::vector<std::string> PrefixStore::multiGet(const std::vector<std::string>& keys, Duration timeout) {
  return store_->multiGet(prefixed(keys), timeout);
}
void PrefixStore::multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  store_->multiSet(prefixed(keys), values);
}
void PrefixStore::setEphemeral(const std::string& key, const std::string& value) {
  store_->setEphemeral(prefixed(key), value);
}
void PrefixStore::setCloseNotice(const std::string& key, const std::string& value) {
  store_->setCloseNotice(key.empty() ? key : prefixed(key), value);
}

}  // namespace pltrun
