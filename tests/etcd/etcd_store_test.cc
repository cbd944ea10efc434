// EtcdStore beyond the conformance suite (which runs over it too): what only a replicated
// store with leases must do, against real etcd members started by the test.
//   - a watch resumes on another member from the revision it had, losing no event;
//   - a process that dies without a word (SIGKILL) has its close notice fired by the
//     survivors once its lease expires, and its ephemeral keys vanish;
//   - a lease etcd let go is known expired once asked, and the store then refuses every
//     request with one line (the agent joins again as a new node);
//   - with one member of 3 killed, the store's operations go on;
//   - etcd authentication: the right password works, a wrong one is one clear error.

#include "rendezvous/etcd/etcd_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <thread>

#include "etcd/etcd_cluster.h"
#include "pltrun/error.h"

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

etcd::EtcdStoreOptions storeOptions(std::vector<pltrun::Endpoint> endpoints, const std::string& prefix) {
  etcd::EtcdStoreOptions options;
  options.client.endpoints = std::move(endpoints);
  options.client.timeout = 2s;
  options.keyPrefix = prefix;
  options.leaseTtl = 2s;
  return options;
}

// Runs `etcdctl ARGS...` against `endpoint`; its status.
int etcdctl(const pltrun::Endpoint& endpoint, std::vector<std::string> args) {
  std::vector<std::string> argv = {"/usr/bin/etcdctl", "--endpoints", endpointText(endpoint)};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess command(argv, {"ETCDCTL_API=3"});
  Finished done = command.wait(20s);
  INFO("etcdctl: " << done.out << done.err);
  return done.status;
}

}  // namespace

TEST_CASE("etcd store: a watch goes on at another member from the revision it had, losing no event", "[etcd]") {
  EtcdCluster cluster(3);
  etcd::EtcdClientOptions options;
  options.endpoints = cluster.endpoints();
  options.timeout = 2s;
  etcd::EtcdClient watcher(options);
  const std::int64_t seen = watcher.range("/w/key").revision;
  const int member = cluster.memberAt(watcher.currentEndpoint());
  REQUIRE(member >= 0);
  cluster.kill(member);
  // Written while the watcher's member is down, before its watch even starts.
  etcd::EtcdClientOptions others = options;
  others.endpoints = {cluster.endpoint((member + 1) % 3), cluster.endpoint((member + 2) % 3)};
  etcd::EtcdClient writer(others);
  writer.put("/w/key", "first");
  writer.put("/w/key", "second");
  const etcd::WatchMessage message = watcher.watch("/w/key", "", seen + 1, 10s);
  REQUIRE(!message.events.empty());
  CHECK(message.events.front().kv.value == "first");  // from the revision given: nothing skipped
  CHECK(watcher.currentEndpoint() != endpointText(cluster.endpoint(member)));
}

TEST_CASE("etcd store: a process killed without a word has its close notice fired once its lease expires", "[etcd]") {
  EtcdCluster cluster(1);
  const std::string prefix = "/notice-test/";
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // the process that dies: its notice and an ephemeral key, then nothing
    etcd::EtcdStore owner(storeOptions(cluster.endpoints(), prefix));
    owner.setCloseNotice("round/end", "node lost");
    owner.setEphemeral("alive", "yes");
    (void)!write(ready[1], "1", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte = 0;
  REQUIRE(read(ready[0], &byte, 1) == 1);
  close(ready[0]);
  etcd::EtcdStore survivor(storeOptions(cluster.endpoints(), prefix));
  CHECK(survivor.check({"alive"}));
  CHECK_FALSE(survivor.check({"round/end"}));
  const auto killed = std::chrono::steady_clock::now();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  CHECK(survivor.get("round/end", 15s) == "node lost");
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - killed;
  WARN("the dead process's notice fired " << took.count() << " s after SIGKILL (lease TTL 2 s)");
  CHECK_FALSE(survivor.check({"alive"}));
}

TEST_CASE("etcd store: a lease etcd let go is known expired when asked, and every request then refuses", "[etcd]") {
  EtcdCluster cluster(1);
  etcd::EtcdStore store(storeOptions(cluster.endpoints(), "/expired-test/"));
  store.set("before", "1");
  CHECK_FALSE(store.lease().confirmExpired());
  etcd::EtcdClient(storeOptions(cluster.endpoints(), "/").client).revokeLease(store.lease().id());
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!store.lease().confirmExpired() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  CHECK(store.lease().expired());
  try {
    store.set("after", "1");
    FAIL("a store on an expired lease wrote");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::Network);
    CHECK(std::string(error.what()).find("lease expired") != std::string::npos);
  }
  CHECK(store.lease().sinceLastRenewal() < 10s);
}

TEST_CASE("etcd store: with one member of 3 killed, every operation goes on", "[etcd]") {
  EtcdCluster cluster(3);
  etcd::EtcdStore store(storeOptions(cluster.endpoints(), "/failover/"));
  store.set("a", "1");
  cluster.kill(0);
  cluster.kill(1);
  cluster.restart(1);  // 2 of 3: a quorum again, with member 0 still down
  cluster.waitUntilAnswering(1);
  CHECK(store.get("a", 10s) == "1");
  CHECK(store.add("n", 2) == 2);
  CHECK(store.compareSet("a", "1", "2") == "2");
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    etcd::EtcdStore other(storeOptions({cluster.endpoint(2)}, "/failover/"));
    other.set("b", "x");
  });
  CHECK_NOTHROW(store.wait({"b"}, 10s));
  later.join();
}

TEST_CASE("etcd store: with authentication on, the user's password works and a wrong one is one clear error",
          "[etcd]") {
  EtcdCluster cluster(1);
  const pltrun::Endpoint endpoint = cluster.endpoint(0);
  REQUIRE(etcdctl(endpoint, {"user", "add", "root:s3cret-pw"}) == 0);
  REQUIRE(etcdctl(endpoint, {"auth", "enable"}) == 0);
  etcd::EtcdStoreOptions options = storeOptions({endpoint}, "/auth/");
  options.client.user = "root";
  options.client.password = "s3cret-pw";
  etcd::EtcdStore store(options);
  store.set("k", "v");
  CHECK(store.get("k", 5s) == "v");

  options.client.password = "wrong";
  try {
    etcd::EtcdStore refused(options);
    FAIL("a wrong password was accepted");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::PermissionDenied);
    CHECK_THAT(error.what(), Catch::Contains("refused user 'root'") && Catch::Contains("password_file"));
  }
  options.client.user.clear();  // no credentials at all: etcd refuses to read or write
  etcd::EtcdStore anonymous(options);
  CHECK_THROWS_AS(anonymous.set("k", "w"), Error);
}
