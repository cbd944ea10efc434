#pragma once
// A Store held in this process: for tests, and for programs that run without a launcher.
// Several handles (connect()) share one table, each like a separate client connection:
// destroying a handle deletes the keys it set with setEphemeral, then applies its close
// notice (setCloseNotice).

#include <memory>

#include "pltrun/store.h"

namespace pltrun {

class InMemoryStore : public Store {
 public:
  InMemoryStore();
  ~InMemoryStore() override;

  /// Another client of the same table.
  std::unique_ptr<InMemoryStore> connect() const;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Duration timeout) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Duration timeout) override;
  bool deleteKey(const std::string& key) override;
  std::int64_t numKeys() override;
  // The composite operations each under the table's one lock: atomic, as the server's
  // requests are (Store's defaults are a request per key).
  void append(const std::string& key, const std::string& value) override;
  std::vector<std::string> multiGet(const std::vector<std::string>& keys, Duration timeout) override;
  void multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) override;
  void setEphemeral(const std::string& key, const std::string& value) override;
  void setCloseNotice(const std::string& key, const std::string& value) override;

  using Store::get;
  using Store::wait;

 private:
  struct Shared;
  InMemoryStore(std::shared_ptr<Shared> shared);
  std::shared_ptr<Shared> shared_;
  std::uint64_t owner_;
};

}  // namespace pltrun
