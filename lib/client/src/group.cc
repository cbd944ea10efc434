#include "pltrun/group.h"

#include <algorithm>
#include <atomic>

#include "pltrun/error.h"
#include "pltrun/in_memory_store.h"
#include "pltrun/prefix_store.h"
#include "pltrun/tcp_store.h"

namespace pltrun {

namespace {
// Groups joined by this process so far: a process is one rank, so its k-th joined group
// meets the k-th joined group of every other rank, and no other.
std::atomic<std::uint64_t> groupsJoined{0};
}  // namespace

std::unique_ptr<Group> Group::join() { return join(Context::fromEnvironment()); }

std::unique_ptr<Group> Group::join(const Context& context, Duration connectTimeout) {
  const std::string keySpace = "group_" + std::to_string(groupsJoined++);
  if (!context.launched) return std::make_unique<Group>(context, std::make_shared<InMemoryStore>(), keySpace);
  if (!context.agentStore) {
    throw Error(ErrorCode::InvalidArgument,
                "the launcher hosts no store for its workers (TORCHELASTIC_USE_AGENT_STORE is not True): run under "
                "pltrun without --no-agent-store, or torchrun with --rdzv-backend c10d");
  }
  TcpStoreOptions options;
  options.host = context.masterAddr;
  options.port = context.masterPort;
  options.connectTimeout = connectTimeout;
  return std::make_unique<Group>(context, std::make_shared<TcpStore>(options), keySpace);
}

Group::Group(Context context, std::shared_ptr<Store> store, const std::string& keySpace)
    : context_(std::move(context)),
      // One key space per restart (and per joined group): nothing another attempt or group
      // left behind is ever read.
      store_(std::make_shared<PrefixStore>(
          "pltrun/attempt_" + std::to_string(context_.restartCount) + (keySpace.empty() ? "" : "/" + keySpace),
          std::move(store))) {
  if (context_.worldSize < 1 || context_.rank < 0 || context_.rank >= context_.worldSize) {
    throw Error(ErrorCode::InvalidArgument, "group: rank " + std::to_string(context_.rank) +
                                                " is not a rank of a world of " + std::to_string(context_.worldSize));
  }
}

std::string Group::nextKey(const std::string& operation) { return operation + "/" + std::to_string(sequence_++); }

void Group::barrier(Duration timeout) {
  const std::string key = nextKey("barrier");
  // The last rank to arrive opens the barrier for everyone: O(world) requests in all.
  if (store_->add(key + "/arrived", 1) == context_.worldSize) store_->set(key + "/open", "1");
  try {
    store_->wait({key + "/open"}, timeout);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Timeout) throw;
    std::int64_t arrived = store_->add(key + "/arrived", 0);
    throw Error(ErrorCode::Timeout, "barrier timed out after " + std::to_string(timeout.count()) + " ms: " +
                                        std::to_string(arrived) + " of " + std::to_string(context_.worldSize) +
                                        " ranks arrived (rank " + std::to_string(context_.rank) + " waited)");
  }
}

std::string Group::broadcastUnder(const std::string& key, const std::string& bytes, int root, Duration timeout) {
  if (root < 0 || root >= context_.worldSize) {
    throw Error(ErrorCode::InvalidArgument, "broadcast root " + std::to_string(root) + " is not a rank of a world of " +
                                                std::to_string(context_.worldSize));
  }
  if (context_.rank == root) {
    store_->set(key, bytes);
    return bytes;
  }
  return store_->get(key, timeout);
}

std::string Group::broadcast(const std::string& bytes, int root, Duration timeout) {
  return broadcastUnder(nextKey("broadcast"), bytes, root, timeout);
}

std::vector<std::string> Group::allGather(const std::string& bytes, Duration timeout) {
  const std::string key = nextKey("allgather");
  store_->set(key + "/" + std::to_string(context_.rank), bytes);
  std::vector<std::string> keys;
  for (int rank = 0; rank < context_.worldSize; ++rank) keys.push_back(key + "/" + std::to_string(rank));
  return store_->multiGet(keys, timeout);
}

std::string Group::broadcastNamed(const std::string& name, const std::string& bytes, int root, Duration timeout) {
  auto found =
      std::find_if(namedCounts_.begin(), namedCounts_.end(), [&](const auto& entry) { return entry.first == name; });
  if (found == namedCounts_.end()) found = namedCounts_.insert(namedCounts_.end(), {name, 0});
  return broadcastUnder("named/" + name + "/" + std::to_string(found->second++), bytes, root, timeout);
}

}  // namespace pltrun
