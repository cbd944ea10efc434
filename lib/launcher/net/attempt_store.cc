#include "launcher/net/attempt_store.h"

#include <vector>

#include "launcher/net/free_port.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// How many fresh listeners to try before giving up on a port no earlier attempt used: the
// kernel hands out ephemeral ports spread over tens of thousands, so a repeat is rare.
constexpr int kPortTries = 64;

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

// The old listener stays open until the new one has its port, so the kernel cannot hand
// that port out again; listeners on ports an earlier attempt used are kept aside until the
// loop ends for the same reason.
int AttemptStore::listenOnUnusedPort() {
  std::vector<std::unique_ptr<HostedStore>> rejected;
  for (int tries = 0; tries < kPortTries; ++tries) {
    std::unique_ptr<HostedStore> next = listen(0);
    if (usedPorts_.insert(next->port()).second) {
      close();
      current_ = std::move(next);
      return current_->port();
    }
    rejected.push_back(std::move(next));
  }
  throw Error(ErrorCode::Network, "cannot find a port on " + bindAddress_ +
                                      " that no earlier attempt of this run used; pass --master-port");
}

// For rank 0's worker: a port that is free now (the last attempt's store may still hold
// its port in TIME_WAIT, and a straggler of it must not reach the new one).
int AttemptStore::pickUnusedPort() {
  for (int tries = 0; tries < kPortTries; ++tries) {
    const int port = pickFreePort(bindAddress_);
    if (usedPorts_.insert(port).second) return port;
  }
  throw Error(ErrorCode::Network, "cannot find a free port on " + bindAddress_ +
                                      " that no earlier attempt of this run used; pass --master-port");
}

void AttemptStore::close() { current_.reset(); }

}  // namespace pltrun
