#pragma once
// The processes of one job as a group: barrier, broadcast and all-gather of small data
// (bootstrap-size: ids, addresses, configuration) over the launcher's store, with a
// timeout on every call. Every rank must make the same calls in the same order, as with
// MPI collectives, and join their groups in the same order; each call has its own
// sequence number, and each restart and each group its own key space, so nothing from an
// earlier call, attempt or group is ever read.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "pltrun/context.h"
#include "pltrun/store.h"

namespace pltrun {

class Group {
 public:
  using Duration = std::chrono::milliseconds;

  /// Joins the group described by `context`: connects to the launcher's store at
  /// MASTER_ADDR:MASTER_PORT (an in-memory store for a world of one without a launcher).
  /// Throws Error naming the endpoint when the store cannot be reached, and
  /// Error(InvalidArgument) when the launcher hosts no store for workers
  /// (TORCHELASTIC_USE_AGENT_STORE is not True).
  static std::unique_ptr<Group> join(const Context& context, Duration connectTimeout = std::chrono::seconds(60));
  /// Joins with the environment's context.
  static std::unique_ptr<Group> join();

  /// A group over any store (tests; programs with their own store). Groups sharing a
  /// store and an attempt need distinct `keySpace`s; join() numbers them itself.
  Group(Context context, std::shared_ptr<Store> store, const std::string& keySpace = "");

  const Context& context() const { return context_; }
  int rank() const { return context_.rank; }
  int worldSize() const { return context_.worldSize; }
  /// The store, under this attempt's key prefix.
  Store& store() { return *store_; }

  /// Returns once every rank has called it. Error(Timeout) says how many arrived.
  void barrier(Duration timeout = std::chrono::minutes(5));
  /// Every rank gets `root`'s bytes (what other ranks pass is ignored).
  std::string broadcast(const std::string& bytes, int root = 0, Duration timeout = std::chrono::minutes(5));
  /// Every rank gets every rank's bytes, in rank order.
  std::vector<std::string> allGather(const std::string& bytes, Duration timeout = std::chrono::minutes(5));
  /// broadcast under a caller-chosen name instead of the call sequence, so independent
  /// users (one per communicator) cannot collide: the n-th call with a name meets the
  /// n-th call with the same name on every rank.
  std::string broadcastNamed(const std::string& name, const std::string& bytes, int root = 0,
                             Duration timeout = std::chrono::minutes(5));

 private:
  std::string nextKey(const std::string& operation);
  std::string broadcastUnder(const std::string& key, const std::string& bytes, int root, Duration timeout);

  Context context_;
  std::shared_ptr<Store> store_;
  std::uint64_t sequence_ = 0;
  std::vector<std::pair<std::string, std::uint64_t>> namedCounts_;
};

}  // namespace pltrun
