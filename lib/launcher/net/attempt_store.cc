#include "launcher/net/attempt_store.h"

#include <vector>

#include "launcher/net/free_port.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// How many fresh listeners to try before giving up on a port no earlier attempt used: the
// kernel hands out ephemeral ports spread over tens of thousands, so a repeat is rare.
constexpr int kPortTries = 64;

Error noPort(const std::string& what, const std::string& address) {
  return Error(ErrorCode::Network,
               "cannot find " + what + " on " + address + " that none of the last " +
                   std::to_string(RecentPorts::kAlwaysKept) +
                   " attempts of this run used; widen the ephemeral port range or pass --master-port");
}

}  // namespace

AttemptStore::AttemptStore(Host host, std::string bindAddress, std::optional<int> fixedPort)
    : host_(host), bindAddress_(std::move(bindAddress)), fixedPort_(fixedPort) {
  if (hostedHere()) rdzv::raiseOpenFileLimit();  // a store holds one descriptor per client
}

AttemptStore::~AttemptStore() { close(); }

std::unique_ptr<HostedStore> AttemptStore::listen(int port) {
  rdzv::StoreServerOptions options;
  options.host = bindAddress_;
  options.port = port;
  options.descriptorBudget = rdzv::openFileLimitShare(1, 4);
  options.maxStoreBytes = kMaxStoreBytes;
  options.maxStoreKeys = kMaxStoreKeys;
  return std::make_unique<HostedStore>(options);
}

int AttemptStore::openNext() {
  if (!hostedHere()) return fixedPort_ ? *fixedPort_ : pickUnusedPort();
  if (fixedPort_) {
    // The same port: the old listener must go first.
    close();
    current_ = listen(*fixedPort_);
    return current_->port();
  }
  return listenOnUnusedPort();
}

bool AttemptStore::takeIfUnused(int port) {
  const auto now = RecentPorts::Clock::now();
  if (recentPorts_.contains(port, now)) return false;
  recentPorts_.add(port, now);
  return true;
}

// The old listener stays open until the new one has its port, so the kernel cannot hand
// that port out again; listeners on ports a recent attempt used are kept aside until the
// loop ends for the same reason. A crowded range first makes room among the older ports.
int AttemptStore::listenOnUnusedPort() {
  std::vector<std::unique_ptr<HostedStore>> rejected;
  for (int tries = 0; tries < 2 * kPortTries; ++tries) {
    if (tries == kPortTries && !recentPorts_.makeRoom()) break;
    std::unique_ptr<HostedStore> next = listen(0);
    if (takeIfUnused(next->port())) {
      close();
      current_ = std::move(next);
      return current_->port();
    }
    rejected.push_back(std::move(next));
  }
  throw noPort("a port", bindAddress_);
}

// For rank 0's worker: a port that is free now (the last attempt's store may still hold
// its port in TIME_WAIT, and a straggler of it must not reach the new one).
int AttemptStore::pickUnusedPort() {
  for (int tries = 0; tries < 2 * kPortTries; ++tries) {
    if (tries == kPortTries && !recentPorts_.makeRoom()) break;
    const int port = pickFreePort(bindAddress_);
    if (takeIfUnused(port)) return port;
  }
  throw noPort("a free port", bindAddress_);
}

void AttemptStore::close() { current_.reset(); }

}  // namespace pltrun
