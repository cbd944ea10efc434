// Issue 42, finding 3: a local user's flood cannot make the store hold much more than its
// limits. Against the real pltrun-store (a separate process, its memory read from /proc)
// and the agent store of a real single-node pltrun job, attacked by another Unix user:
// empty QUEUE_PUSH until the key or byte limit refuses them (each item counts as a key and
// is charged its real cost), and WAITs on big keys parked from several connections (charged
// until they end; a request too big for the connections' buffers is refused as it arrives).
// Each refusal closes that connection, as torch's server refuses, and logs which limit it
// passed; what is stored stays.

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/other_user.h"
#include "helpers/temp_dir.h"
#include "rendezvous/store/store_costs.h"
#include "rendezvous/store/store_protocol.h"
#include "store/raw_connection.h"
#include "store/store_process.h"
#include "store/torch2_frames.h"
#include "store/torch_wire_client.h"

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;
using rdzv::Command;

namespace {

constexpr long kLimitKb = 1024;  // --max-store-bytes 1048576
// What the store may grow by: the table and the connections' buffers, each at most the
// limit, and the one request being served (the old code grew by hundreds of MB).
constexpr long kGrowthBoundKb = 3 * kLimitKb;

// VALIDATE, then `count` empty QUEUE_PUSH to "/q" (19 bytes each), in 1 MB pieces.
void floodQueue(RawConnection& attacker, int count) {
  const std::string push = frame(withKeys(Command::QueuePush, {"/q"}, {""}));
  std::string piece;
  for (int i = 0; i < 50000; ++i) piece += push;
  bool open = attacker.send(validate());
  for (int sent = 0; open && sent < count; sent += 50000) open = attacker.send(piece);
}

// `keys` keys of 60000 bytes, named apart by `connection`, under torch's "/" prefix.
std::vector<std::string> bigKeys(int connection, int keys) {
  std::vector<std::string> names;
  for (int key = 0; key < keys; ++key) {
    names.push_back("/" + std::to_string(connection) + "/" + std::to_string(key) + "/" + std::string(60000, 'k'));
  }
  return names;
}

}  // namespace

TEST_CASE("an empty QUEUE_PUSH flood is refused at --max-keys and --max-store-bytes, keeping what was queued",
          "[store][limits][flood]") {
  std::vector<std::string> flags{"--max-store-bytes", "1048576"};
  std::int64_t fits = 0;
  std::string refusal;
  SECTION("at --max-keys: each item is a key") {
    flags.insert(flags.end(), {"--max-keys", "100"});
    fits = 100;
    refusal = "QUEUE_PUSH refused: an item of queue '/q' would pass the store's limit of 100 keys";
  }
  SECTION("at --max-store-bytes: each item is charged its real cost") {
    fits = (1048576 - rdzv::cost::kQueue - 2) / rdzv::cost::kQueueItem;
    refusal = "QUEUE_PUSH refused: an item of queue '/q' would take the store past its limit of 1048576 bytes";
  }
  StoreProcess store(flags);
  const long before = store.statusKb("VmHWM");
  RawConnection attacker(store.portNumber());
  floodQueue(attacker, 200000);
  CHECK(attacker.closedByServer());
  INFO("store log: " << store.log());
  CHECK_THAT(store.log(), Catch::Contains(refusal));
  TorchWireClient probe(store.portNumber());
  CHECK(probe.length("q") == fits);
  const long grown = store.statusKb("VmHWM") - before;
  INFO("store peak RSS grew " << grown << " kB holding " << fits << " empty items");
  CHECK(grown < kGrowthBoundKb);
}

TEST_CASE("WAITs on big keys parked from five connections are refused past --max-store-bytes",
          "[store][limits][flood]") {
  StoreProcess store({"--max-store-bytes", "1048576"});
  const long before = store.statusKb("VmHWM");
  SECTION("a 20 MB WAIT is refused as it arrives: all connections' buffers hold at most the limit") {
    for (int connection = 0; connection < 5; ++connection) {
      RawConnection attacker(store.portNumber());
      attacker.send(validate() + frame(withKeys(Command::Wait, bigKeys(connection, 335))));  // 20.1 MB
      CHECK(attacker.closedByServer());
    }
    INFO("store log: " << store.log());
    CHECK_THAT(store.log(), Catch::Contains("its requests would take the buffers of all connections past their "
                                            "limit of 1048576 bytes"));
  }
  SECTION("a WAIT that arrives whole is charged while it is parked: the second one does not fit") {
    std::vector<std::unique_ptr<RawConnection>> attackers;
    for (int connection = 0; connection < 5; ++connection) {
      attackers.push_back(std::make_unique<RawConnection>(store.portNumber()));
      REQUIRE(attackers.back()->send(validate() + frame(withKeys(Command::Wait, bigKeys(connection, 4)))));  // 240 kB
    }
    for (int connection = 1; connection < 5; ++connection) CHECK(attackers[connection]->closedByServer());
    INFO("store log: " << store.log());
    CHECK_THAT(
        store.log(),
        Catch::Contains("WAIT refused: a wait on 4 key(s) would take the store past its limit of 1048576 bytes"));
    // The first is still parked, and answered once its keys exist (the wait's charge left
    // room for them).
    std::unique_ptr<TcpStore> setter = storeClient(store.portNumber());
    for (const std::string& key : bigKeys(0, 4)) setter->set(key.substr(1), "");
    CHECK(attackers[0]->receive(1) == std::string(1, '\0'));  // STOP_WAITING
  }
  const long grown = store.statusKb("VmHWM") - before;
  INFO("store peak RSS grew " << grown << " kB");
  CHECK(grown < kGrowthBoundKb);
}

TEST_CASE("another user's empty QUEUE_PUSH flood of a single-node job's agent store stops at its key limit",
          "[store][limits][flood][other_user]") {
  if (!canActAsOtherUsers()) {
    WARN("skipped: needs root, to run the attacker as another Unix user");
    return;
  }
  TempDir dir;
  const std::string portFile = dir.path() + "/port";
  ChildProcess job(pltrunCommand(
      {"--nproc-per-node", "1", "--no-python", "/bin/sh", "-c",
       "echo $MASTER_PORT > " + portFile + ".tmp && mv " + portFile + ".tmp " + portFile + " && sleep 120"}));
  REQUIRE(waitForFile(portFile, 30s));
  const std::string port = std::to_string(std::stoi(readFile(portFile)));
  // 1.1 M empty items: the agent store's limit is 1 Mi keys and queue items.
  ChildProcess attacker(
      asUser(otherUser(1),
             {"/usr/bin/python3", std::string(TESTS_SOURCE_DIR) + "/store/store_flood.py", "queue", port, "1100000"}));
  Finished attack = attacker.wait(120s);
  INFO("attacker: " << attack.out << attack.err);
  CHECK(attack.status == 0);
  CHECK_THAT(attack.out, Catch::Contains("closed by the store"));
  CHECK_THAT(attack.out, Catch::Contains("queue length 1048576"));
  const std::string log = job.stderrSoFar();
  INFO("pltrun: " << log);
  CHECK_THAT(log, Catch::Contains("QUEUE_PUSH refused"));
  CHECK_THAT(log, Catch::Contains("limit of 1048576 keys"));
  job.signal(SIGTERM);
  job.wait(30s);
}
