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

// One node of the job: its plan, its session over the shared store, its fake workers.
class Node {
 public:
  Node(const InMemoryStore& table, int nodes, int maxRestarts, int workers) {
    config_.program = "/bin/true";
    config_.rdzv.backend = RendezvousBackend::C10d;
    config_.rdzv.minNodes = nodes;
    config_.rdzv.maxNodes = nodes;
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
