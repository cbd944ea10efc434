#pragma once
// Keys that someone else writes into a job's rendezvous store. A store without a secret takes
// any client's writes, and on a shared machine the other client is another local user: where
// the tests can act as other users (as root, in CI), the keys are written by the real user
// pltrun-other1 with torch's own TCPStore client (Debian's /usr/bin/python3, through
// setpriv); elsewhere by this process, which writes the same bytes.

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/other_user.h"
#include "pltrun/tcp_store.h"

namespace pltrun::test {

using StoreKeys = std::vector<std::pair<std::string, std::string>>;

/// Writes `keys` (names below pltrun/rdzv/RUN_ID/) to the store at 127.0.0.1:`port` as this
/// process, as any client with access could.
inline void writeJobKeys(int port, const std::string& runId, const StoreKeys& keys) {
  TcpStoreOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  TcpStore client(options);
  for (const auto& [name, value] : keys) client.set("pltrun/rdzv/" + runId + "/" + name, value);
}

/// writeJobKeys as the user pltrun-other1 where the tests can act as other users.
inline void writeForeignKeys(int port, const std::string& runId, const StoreKeys& keys) {
  if (!canActAsOtherUsers()) return writeJobKeys(port, runId, keys);
  const std::string prefix = "pltrun/rdzv/" + runId + "/";
  std::vector<std::string> argv = {
      "/usr/bin/python3", "-c",
      "import datetime, sys\n"
      "from torch.distributed import TCPStore\n"
      "store = TCPStore('127.0.0.1', int(sys.argv[1]), is_master=False, timeout=datetime.timedelta(seconds=30))\n"
      "for name, value in zip(sys.argv[2::2], sys.argv[3::2]):\n"
      "    store.set(name, value.encode('utf-8', 'surrogateescape'))\n",
      std::to_string(port)};
  for (const auto& [name, value] : keys) {
    argv.push_back(prefix + name);
    argv.push_back(value);
  }
  ChildProcess writer(asUser(otherUser(1), argv), {"HOME=/nonexistent"});
  const Finished written = writer.wait(std::chrono::seconds(120));
  INFO(written.err);
  REQUIRE(written.status == 0);
}

}  // namespace pltrun::test
