// Store's default composite operations in the races the conformance suite cannot stage:
// another client deleting a key at the one moment that matters, staged here by a Store of
// primitives that does it itself.

#include <catch2/catch.hpp>
#include <chrono>

#include "pltrun/error.h"
#include "pltrun/in_memory_store.h"
#include "store/primitive_store.h"

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

// Deletes the key just before the first compare-and-set, as another client could between
// append's read and its swap. Past a bound it throws, so that a loop which never ends fails.
class DeletedBeforeSwap : public PrimitiveStore {
 public:
  using PrimitiveStore::PrimitiveStore;
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override {
    if (++swaps == 1) deleteKey(key);
    if (swaps > 10) throw Error(ErrorCode::System, "append went on past 10 compare-and-sets");
    return PrimitiveStore::compareSet(key, expected, desired);
  }
  int swaps = 0;
};

// Deletes `victim` once a wait has seen every key: between multiGet's wait and its reads.
class DeletedAfterWait : public PrimitiveStore {
 public:
  DeletedAfterWait(std::unique_ptr<Store> inner, std::string victim)
      : PrimitiveStore(std::move(inner)), victim_(std::move(victim)) {}
  void wait(const std::vector<std::string>& keys, Duration timeout) override {
    PrimitiveStore::wait(keys, timeout);
    deleteKey(victim_);
  }

 private:
  std::string victim_;
};

}  // namespace

TEST_CASE("append by default creates a key deleted between its read and its swap", "[store][defaults]") {
  InMemoryStore root;
  DeletedBeforeSwap store(root.connect());
  store.set("log", "abc");
  store.append("log", "d");
  CHECK(root.get("log", 1s) == "d");
  CHECK(store.swaps == 2);  // the swap from "abc" found no key; the one from nothing made it
}

TEST_CASE("multiGet by default times out within its timeout on a key deleted after its wait", "[store][defaults]") {
  InMemoryStore root;
  DeletedAfterWait store(root.connect(), "b");
  store.set("a", "1");
  store.set("b", "2");
  const auto start = std::chrono::steady_clock::now();
  try {
    store.multiGet({"a", "b"}, 300ms);
    FAIL("multiGet of a deleted key returned");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::Timeout);
    CHECK_THAT(error.what(), Catch::Contains("'b'"));
  }
  CHECK(std::chrono::steady_clock::now() - start < 3s);
}
