#pragma once
// A view of a Store in which every key is "PREFIX/key", as PyTorch's PrefixStore names
// them, so separate users (a rendezvous round, a communicator) never collide. It passes
// every operation on, the composite ones too, so that the store beneath does each as well
// as it can (one MULTI_GET, one etcd transaction) rather than as Store's defaults.

#include <memory>

#include "pltrun/store.h"

namespace pltrun {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Duration timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  bool deleteKey(const std::string& key) override;
  /// The whole underlying store's count, as PyTorch's PrefixStore reports it.
  std::int64_t numKeys() override;
  void append(const std::string& key, const std::string& value) override;
  std::vector<std::string> multiGet(const std::vector<std::string>& keys, Duration timeout) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) override;
  void setEphemeral(const std::string& key, const std::string& value) override;
  /// The notice's key is prefixed; an empty key (clear) is passed on as it is.
  void setCloseNotice(const std::string& key, const std::string& value) override;
  std::int64_t increment(const std::string& key) override;
  std::size_t waitAny(const std::vector<std::string>& keys, Duration timeout, Duration slice,
                      const std::function<void()>& between) override;

  using Store::get;
  using Store::wait;

 private:
  std::string prefixed(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const;

  std::string prefix_;
  std::shared_ptr<Store> store_;
};

}  // namespace pltrun
