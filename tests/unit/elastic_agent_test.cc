// The elastic agent's round loop over fakes: agents share one InMemoryStore (no store
// hosted, no socket for the rendezvous) and run fake workers (nothing forked), so what an
// agent decides after a round is tested end to end in one process: a success ends the job
// with 0; a worker failure restarts every node's workers while --max-restarts allows, and
// then ends the job with the root cause's status; a failure on one node restarts the
// workers of the other. Each test scripts its workers by the round they start in
// (TORCHELASTIC_RESTART_COUNT in their environment).

#include "launcher/agent/elastic_agent.h"

#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "fake_process_runtime.h"
#include "launcher/agent/agent_session.h"
#include "pltrun/in_memory_store.h"
#include "rendezvous/elastic/node_exclusions.h"
#include "rendezvous/elastic/store_layout.h"

using namespace pltrun;
using fake::FakeProcess;

namespace {

// The value of `name` in a fake worker's environment (-1 when absent).
int environmentNumber(const FakeProcess& process, const std::string& name) {
  const std::string prefix = name + "=";
  for (const std::string& entry : process.launch().environment) {
    if (entry.rfind(prefix, 0) == 0) return std::stoi(entry.substr(prefix.size()));
  }
  return -1;
}

int roundOf(const FakeProcess& process) { return environmentNumber(process, "TORCHELASTIC_RESTART_COUNT"); }

// How a worker of a round ends: with this status at once, or (empty) when it is stopped.
using Script = std::function<std::optional<ProcessEnd>(int round)>;

// What the blame tests change of a node: a range of nodes, its name, --max-node-blames.
struct Elasticity {
  int minNodes = 0;  ///< 0: the job's node count
  std::string name;  ///< node_name=
  int maxNodeBlames = 2;
  std::chrono::milliseconds lastCall{30000};
  std::chrono::milliseconds joinTimeout{600000};
};

// One node of the job: its plan, its session over the shared store, its fake workers.
class Node {
 public:
  Node(const InMemoryStore& table, int nodes, int maxRestarts, int workers, const Elasticity& elasticity = {}) {
    config_.program = "/bin/true";
    config_.rdzv.backend = RendezvousBackend::C10d;
    config_.rdzv.minNodes = elasticity.minNodes > 0 ? elasticity.minNodes : nodes;
    config_.rdzv.maxNodes = nodes;
    config_.rdzv.nodeName = elasticity.name;
    config_.rdzv.lastCallTimeout = elasticity.lastCall;
    config_.rdzv.joinTimeout = elasticity.joinTimeout;
    config_.maxNodeBlames = elasticity.maxNodeBlames;
    config_.rdzv.endpointHost = "127.0.0.1";
    config_.rdzv.localAddr = "127.0.0.1";  // no route lookup
    config_.maxRestarts = maxRestarts;
    layout_.workerCount = workers;
    job_ = std::make_unique<ResolvedJob>(
        ResolvedJob{config_, inherited_, ProgramCommand{"/bin/true", {"true"}}, layout_, "agent-test"});
    session_ = std::make_unique<AgentSession>(
        *job_, table.connect(), [&table] { return std::unique_ptr<Store>(table.connect()); }, fakes_.runtime());
  }

  void script(Script script) {
    fakes_.starter.onStart = [this, script](FakeProcess& process) {
      const std::optional<ProcessEnd> end = script(roundOf(process));
      if (end) boost::asio::post(session_->workers().context(), [&process, end] { process.endWith(*end); });
    };
  }

  int run() { return runElasticAgent(*session_); }

  /// The round of every worker started, in order.
  std::vector<int> rounds() const {
    std::vector<int> rounds;
    for (const auto& process : fakes_.starter.processes()) rounds.push_back(roundOf(*process));
    return rounds;
  }
  /// The signals the workers of `round` received while they ran.
  std::vector<int> signalsInRound(int round) const {
    std::vector<int> signals;
    for (const auto& process : fakes_.starter.processes()) {
      if (roundOf(*process) == round)
        signals.insert(signals.end(), process->signals().begin(), process->signals().end());
    }
    return signals;
  }

 private:
  LaunchConfig config_;
  Environment inherited_;
  WorkerLayout layout_;
  std::unique_ptr<ResolvedJob> job_;
  fake::FakeRuntime fakes_;
  std::unique_ptr<AgentSession> session_;
};

std::optional<ProcessEnd> exitCode(int code) { return ProcessEnd{code, 0}; }

// Runs every node's agent, each on a thread of its own, to its end: their exit statuses.
std::vector<int> runTogether(const std::vector<Node*>& nodes) {
  std::vector<int> statuses(nodes.size(), -1);
  std::vector<std::thread> threads;
  for (size_t index = 0; index < nodes.size(); ++index) {
    threads.emplace_back([&, index] { statuses[index] = nodes[index]->run(); });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

}  // namespace

TEST_CASE("elastic agent: every worker succeeding ends the job with 0 after one round", "[elastic_agent]") {
  InMemoryStore table;
  Node node(table, 1, 3, 2);
  node.script([](int) { return exitCode(0); });
  CHECK(node.run() == 0);
  CHECK(node.rounds() == std::vector<int>{0, 0});
}

TEST_CASE("elastic agent: a failing worker restarts the round until --max-restarts is spent", "[elastic_agent]") {
  InMemoryStore table;
  Node node(table, 1, 2, 1);
  node.script([](int) { return exitCode(3); });
  CHECK(node.run() == 3);  // the root cause's own exit code
  CHECK(node.rounds() == std::vector<int>{0, 1, 2});
}

TEST_CASE("elastic agent: a failure, then a success on the restart, ends the job with 0", "[elastic_agent]") {
  InMemoryStore table;
  Node node(table, 1, 1, 2);
  node.script([](int round) { return exitCode(round == 0 ? 7 : 0); });
  CHECK(node.run() == 0);
  CHECK(node.rounds() == std::vector<int>{0, 0, 1, 1});
}

TEST_CASE("elastic agent: a worker killed by a signal on the last round gives 128 + the signal", "[elastic_agent]") {
  InMemoryStore table;
  Node node(table, 1, 0, 1);
  node.script([](int) { return std::optional<ProcessEnd>(ProcessEnd{0, SIGSEGV}); });
  CHECK(node.run() == 128 + SIGSEGV);
  CHECK(node.rounds() == std::vector<int>{0});
}

TEST_CASE("elastic agent: a failure on one node stops and restarts the other node's workers", "[elastic_agent]") {
  InMemoryStore table;
  // Both sessions exist before any agent thread starts (each forks its orphan guard).
  Node failing(table, 2, 1, 1);
  Node other(table, 2, 1, 2);
  failing.script([](int round) { return exitCode(round == 0 ? 5 : 0); });
  // Round 0: runs until it is stopped; round 1: succeeds.
  other.script([](int round) { return round == 0 ? std::nullopt : exitCode(0); });
  int failingStatus = -1;
  int otherStatus = -1;
  std::thread first([&] { failingStatus = failing.run(); });
  std::thread second([&] { otherStatus = other.run(); });
  first.join();
  second.join();
  CHECK(failingStatus == 0);
  CHECK(otherStatus == 0);
  CHECK(failing.rounds() == std::vector<int>{0, 1});
  CHECK(other.rounds() == std::vector<int>{0, 0, 1, 1});
  // The other node's round-0 workers were stopped as a re-formed job's are: SIGTERM.
  CHECK(other.signalsInRound(0) == std::vector<int>{SIGTERM, SIGTERM});
  CHECK(other.signalsInRound(1).empty());
}

TEST_CASE("elastic agent: a node whose workers end two rounds in a row leaves, and the others finish without it",
          "[elastic_agent][node_blame]") {
  InMemoryStore table;
  // A last call long enough that round 0 waits for all three (the maximum closes it at once).
  Node bad(table, 3, 5, 1, {2, "bad", 2, std::chrono::milliseconds(1500)});
  Node good1(table, 3, 5, 1, {2, "good1", 2, std::chrono::milliseconds(1500)});
  Node good2(table, 3, 5, 1, {2, "good2", 2, std::chrono::milliseconds(1500)});
  bad.script([](int) { return exitCode(3); });
  // Stopped in the rounds the bad node ends; done in the first without it.
  const Script good = [](int round) { return round < 2 ? std::nullopt : exitCode(0); };
  good1.script(good);
  good2.script(good);
  CHECK(runTogether({&bad, &good1, &good2}) == std::vector<int>{1, 0, 0});
  CHECK(bad.rounds() == std::vector<int>{0, 1});
  CHECK(good1.rounds() == std::vector<int>{0, 1, 2});
  CHECK(good2.rounds() == std::vector<int>{0, 1, 2});
  const std::unique_ptr<Store> reader(table.connect());
  const std::vector<rdzv::NodeExclusion> excluded =
      rdzv::excludedNodes(reader->get(rdzv::jobKeyPrefix("agent-test") + "exclusions", std::chrono::seconds(1)));
  REQUIRE(excluded.size() == 1);
  CHECK(excluded[0].node == "bad");
  CHECK(excluded[0].kind == "blamed");
  CHECK_THAT(excluded[0].reason, Catch::StartsWith("its workers ended 2 rounds in a row while the other nodes' ran "
                                                   "(--max-node-blames 2); last, round 1: rank "));
}

TEST_CASE("elastic agent: --max-node-blames 0 keeps a failing node in until --max-restarts is spent",
          "[elastic_agent][node_blame]") {
  InMemoryStore table;
  Node bad(table, 2, 3, 1, {0, "bad", 0});
  Node good(table, 2, 3, 1, {0, "good", 0});
  bad.script([](int) { return exitCode(3); });
  good.script([](int) { return std::nullopt; });
  CHECK(runTogether({&bad, &good}) == std::vector<int>{3, 3});
  CHECK(bad.rounds() == std::vector<int>{0, 1, 2, 3});
  const std::unique_ptr<Store> reader(table.connect());
  CHECK_FALSE(reader->check({rdzv::jobKeyPrefix("agent-test") + "exclusions"}));
}

TEST_CASE("elastic agent: below the minimum without the excluded node, the job fails for want of nodes",
          "[elastic_agent][node_blame]") {
  InMemoryStore table;
  const Elasticity settings{0, "", 2, std::chrono::milliseconds(30000), std::chrono::milliseconds(1500)};
  Node bad(table, 2, 5, 1, settings);
  Node good(table, 2, 5, 1, settings);
  bad.script([](int) { return exitCode(3); });
  good.script([](int) { return std::nullopt; });
  CHECK(runTogether({&bad, &good}) == std::vector<int>{1, 1});  // the good node's: the join timeout's
  CHECK(good.rounds() == std::vector<int>{0, 1});
}
