#include "helpers/torch_store_server.h"

#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

namespace pltrun::test {

namespace {

// Serves until stdin closes... it has none; it serves until SIGTERM.
constexpr const char* kServer = R"(
import datetime, os, signal, sys, time
from torch.distributed import TCPStore
store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=datetime.timedelta(seconds=30))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(store.port))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    time.sleep(1)
)";

}  // namespace

TorchStoreServer::TorchStoreServer() {
  portFile_ = dir_ / "port";
  process_ = std::make_unique<ChildProcess>(std::vector<std::string>{"/usr/bin/python3", "-c", kServer, portFile_});
  if (!waitForFile(portFile_, std::chrono::seconds(60))) {
    Finished finished = process_->wait(std::chrono::seconds(5));
    FAIL(
        "torch's TCPStore server did not start (needs Debian's python3-torch: scripts/install-deps.sh "
        "--with-torch): "
        << finished.err);
  }
  port_ = std::stoi(readFile(portFile_));
}

TorchStoreServer::~TorchStoreServer() {
  process_->signal(SIGTERM);
  process_->wait(std::chrono::seconds(10));
}

}  // namespace pltrun::test
