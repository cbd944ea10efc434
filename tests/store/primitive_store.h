#pragma once
// A Store that implements the primitives only, each passed to another Store, and leaves
// every composite operation (append, multiGet, multiSet, increment, waitAny) to Store's
// defaults: the conformance suite runs over it, so that the defaults are tested on their
// own, whatever the backends override.

#include <memory>
#include <utility>

#include "pltrun/store.h"

namespace pltrun::test {

class PrimitiveStore : public Store {
 public:
  explicit PrimitiveStore(std::unique_ptr<Store> inner) : Store(inner->timeout()), inner_(std::move(inner)) {}

  void set(const std::string& key, const std::string& value) override { inner_->set(key, value); }
  std::string get(const std::string& key, Duration timeout) override { return inner_->get(key, timeout); }
  std::int64_t add(const std::string& key, std::int64_t delta) override { return inner_->add(key, delta); }
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override {
    return inner_->compareSet(key, expected, desired);
  }
  bool check(const std::vector<std::string>& keys) override { return inner_->check(keys); }
  void wait(const std::vector<std::string>& keys, Duration timeout) override { inner_->wait(keys, timeout); }
  bool deleteKey(const std::string& key) override { return inner_->deleteKey(key); }
  std::int64_t numKeys() override { return inner_->numKeys(); }
  void setEphemeral(const std::string& key, const std::string& value) override { inner_->setEphemeral(key, value); }
  void setCloseNotice(const std::string& key, const std::string& value) override { inner_->setCloseNotice(key, value); }

  using Store::get;
  using Store::wait;

 private:
  std::unique_ptr<Store> inner_;
};

}  // namespace pltrun::test
