// The jobs of PyTorch's own launcher tests (test/distributed/launcher/test_run.py) started
// by the real pltrun instead of torchrun, with real torch workers
// (tests/e2e/torch_launcher_cases.py) under torch 1.13, 2.6 and 2.14: the ways of launching
// that test_run.py uses and the other e2e tests do not: --run-path (--run_path, 1.13's
// spelling), --standalone, --nnodes 1:2 with one agent (c10d) and with two (c10d, and etcd
// too), a worker that fails under an elastic launch, init_process_group through init_method
// "env://" and "tcp://MASTER_ADDR:MASTER_PORT" under an elastic launch,
// torch.distributed.is_torchelastic_launched(), and the console and log files of
// --redirects/--tee with the line prefix template. The flags are spelled as test_run.py
// spells them (`--nnodes=1:2`, `--redirect=3`, `--rdzv_conf=...`). Loopback only, no fixed
// port: pltrun picks its own (c10d endpoints 127.0.0.1:0, as in elastic_job.h), the etcd
// fixture finds free ones for its member.

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "e2e/torch_runtimes.h"
#include "etcd/etcd_cluster.h"
#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kScript = std::string(TESTS_SOURCE_DIR) + "/e2e/torch_launcher_cases.py";
constexpr auto kJob = 150s;  // a torch job on a loaded 2-core machine, chroot start included

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> concat(std::vector<std::string> first, const std::vector<std::string>& second) {
  first.insert(first.end(), second.begin(), second.end());
  return first;
}

Finished runTorch(const TorchRuntime& torch, const TempDir& dir, const std::vector<std::string>& args,
                  const std::vector<std::string>& extraEnv = {}) {
  torch.available();
  ChildProcess pltrun(pltrunCommand(args), concat(torch.workerEnvironment(dir.path()), extraEnv));
  return pltrun.wait(kJob);
}

std::string describe(const Finished& run) {
  return "status " + std::to_string(run.status) + (run.timedOut ? " (timed out)" : "") + "\n--- stdout:\n" + run.out +
         "--- stderr:\n" + run.err;
}

// What each worker of `join` wrote (DIR/rank_<RANK>.json), by rank.
std::vector<json> joinRecords(const std::string& directory) {
  std::vector<json> records;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank_", 0) == 0 && entry.path().extension() == ".json") {
      records.push_back(json::parse(readFile(entry.path().string())));
    }
  }
  std::sort(records.begin(), records.end(),
            [](const json& a, const json& b) { return a.at("rank").get<int>() < b.at("rank").get<int>(); });
  return records;
}

// Every rank 0..world-1 wrote its record once, all in one world whose all-reduce each of
// them took part in exactly once, launched by a torchelastic launcher with the agent store.
void checkOneWorld(const std::vector<json>& records, int world) {
  INFO("records: " << json(records).dump());
  REQUIRE(records.size() == static_cast<size_t>(world));
  for (int rank = 0; rank < world; ++rank) {
    const json& record = records[rank];
    CHECK(record.at("rank") == rank);
    CHECK(record.at("RANK") == std::to_string(rank));
    CHECK(record.at("world_size") == world);
    CHECK(record.at("slots").get<std::vector<int>>() == std::vector<int>(world, 1));
    CHECK(record.at("launched") == true);
    CHECK(record.at("TORCHELASTIC_USE_AGENT_STORE") == "True");
    CHECK(record.at("TORCHELASTIC_RESTART_COUNT") == "0");
    CHECK(record.at("TORCHELASTIC_RUN_ID") == records[0].at("TORCHELASTIC_RUN_ID"));
    CHECK(record.at("MASTER_PORT") == records[0].at("MASTER_PORT"));
  }
}

// No worker of the records outlived its launcher.
void checkWorkersGone(const std::vector<json>& records) {
  std::vector<pid_t> pids;
  for (const json& record : records) pids.push_back(record.at("pid").get<pid_t>());
  const std::vector<pid_t> alive = waitUntilGone(pids, 10s);
  INFO("workers still alive: " << json(alive).dump());
  CHECK(alive.empty());
}

// The args of one agent of an elastic job of `nnodes` ("1:2"), meeting at `endpoint` (the
// c10d store's, or the etcd members').
std::vector<std::string> elasticArgs(const std::string& nnodes, int nprocPerNode, const std::string& endpoint,
                                     const std::string& conf, const std::string& runId,
                                     const std::string& backend = "c10d") {
  return {"--nnodes=" + nnodes,
          "--nproc-per-node=" + std::to_string(nprocPerNode),
          "--rdzv-backend=" + backend,
          "--rdzv-endpoint=" + endpoint,
          conf,
          "--rdzv-id=" + runId,
          "--monitor-interval=1",
          "--start-method=spawn",
          "--term-timeout=5"};
}

// Where pltrun says it keeps the worker logs when no --log-dir was given.
std::string announcedLogRoot(const std::string& err) {
  const std::string marker = "worker logs go to ";
  const size_t at = err.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = at + marker.size();
  return err.substr(start, err.find('\n', start) - start);
}

}  // namespace

TEST_CASE("launcher case: --run-path and --run_path run a Python script whatever its name", "[torch][launcher_cases]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  TempDir dir;
  // A script without ".py", as torchrun's --run-path allows: a link to the worker script
  // (Python resolves it, so the script's own directory stays on its path).
  const std::string script = dir / "launcher_cases";
  fs::create_symlink(kScript, script);
  fs::create_directory(dir / "run_path");
  INFO("torch " << torch.version);

  // Without --run-path the file is a program to execute, and it is not executable.
  Finished direct = runTorch(torch, dir, {"--nproc-per-node=1", script, "launched", dir / "direct"});
  INFO("without --run-path: " << describe(direct));
  CHECK(direct.status == 127);
  CHECK_FALSE(fs::exists(dir / "direct"));

  Finished dashed = runTorch(torch, dir,
                             {"--run-path", "--nnodes=1", "--nproc-per-node=4", "--monitor-interval=1",
                              "--start-method=spawn", script, "join", dir / "run_path", "env"});
  INFO("--run-path: " << describe(dashed));
  REQUIRE(dashed.status == 0);
  const std::vector<json> records = joinRecords(dir / "run_path");
  checkOneWorld(records, 4);
  checkWorkersGone(records);

  // torch 1.13's spelling; as in torchrun, it wins over --no-python.
  Finished underscored = runTorch(
      torch, dir, {"--run_path", "--no-python", "--nnodes=1", "--nproc-per-node=1", script, "launched", dir / "out"});
  INFO("--run_path --no-python: " << describe(underscored));
  REQUIRE(underscored.status == 0);
  CHECK(readFile(dir / "out") == "True");
}

TEST_CASE("launcher case: --standalone jobs pick their own port and run id, two at once on one machine",
          "[torch][launcher_cases]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  torch.available();
  TempDir dir;
  INFO("torch " << torch.version);
  const std::vector<std::string> env = torch.workerEnvironment(dir.path());
  const std::vector<std::string> flags = {"--nnodes=1", "--standalone", "--monitor-interval=1", "--start-method=spawn"};
  fs::create_directory(dir / "a");
  fs::create_directory(dir / "b");
  // torchrun's fixed default port (29500) would make the second job fail to start or join
  // the first's store; --standalone's free ports keep them apart.
  ChildProcess first(pltrunCommand(concat(flags, {"--nproc-per-node=4", kScript, "join", dir / "a", "env"})), env);
  ChildProcess second(pltrunCommand(concat(flags, {"--nproc-per-node=2", kScript, "join", dir / "b", "env"})), env);
  const Finished a = first.wait(kJob);
  const Finished b = second.wait(kJob);
  INFO("job a: " << describe(a) << "\njob b: " << describe(b));
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  const std::vector<json> recordsA = joinRecords(dir / "a");
  const std::vector<json> recordsB = joinRecords(dir / "b");
  checkOneWorld(recordsA, 4);
  checkOneWorld(recordsB, 2);
  checkWorkersGone(recordsA);
  checkWorkersGone(recordsB);
  for (const auto* records : {&recordsA, &recordsB}) {
    const json& rank0 = records->front();
    CHECK(rank0.at("MASTER_ADDR") == "127.0.0.1");  // one node, on localhost
    const std::string runId = rank0.at("TORCHELASTIC_RUN_ID");
    CHECK_FALSE(runId.empty());
    CHECK(runId != "none");
  }
  CHECK(recordsA[0].at("TORCHELASTIC_RUN_ID") != recordsB[0].at("TORCHELASTIC_RUN_ID"));
  CHECK(recordsA[0].at("MASTER_PORT") != recordsB[0].at("MASTER_PORT"));
}

TEST_CASE("launcher case: --nnodes=1:2 with one agent forms a c10d round of one node after the last call",
          "[torch][launcher_cases]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  // The workers join through env:// here and through tcp://MASTER_ADDR:MASTER_PORT in the
  // two-agent case below: both under an elastic launch.
  TempDir dir;
  INFO("torch " << torch.version);
  const std::string runId = "cases" + std::to_string(getpid());
  // The quotes inside the value, as test_run.py writes it; timeout is join_timeout's alias.
  Finished run = runTorch(
      torch, dir,
      concat(elasticArgs("1:2", 4, "127.0.0.1:0", "--rdzv-conf='join_timeout=5,last_call_timeout=1,timeout=5'", runId),
             {kScript, "join", dir.path(), "env"}));
  INFO(describe(run));
  REQUIRE(run.status == 0);
  const std::vector<json> records = joinRecords(dir.path());
  checkOneWorld(records, 4);
  checkWorkersGone(records);
  for (const json& record : records) {
    CHECK(record.at("init_method") == "env://");
    CHECK(record.at("TORCHELASTIC_RUN_ID") == runId);
    CHECK(record.at("GROUP_RANK") == "0");
    CHECK(record.at("LOCAL_WORLD_SIZE") == "4");
  }
}

TEST_CASE("launcher case: two agents of --nnodes=1:2 (c10d or etcd) make one world that joins through tcp:// init",
          "[torch][launcher_cases]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  const std::string backend = GENERATE(as<std::string>{}, "c10d", "etcd");
  torch.available();
  TempDir dir;
  INFO("torch " << torch.version << ", " << backend);
  const std::vector<std::string> env = torch.workerEnvironment(dir.path());
  const std::string runId = "cases" + std::to_string(getpid());
  // The default last call (30 s) waits for the second agent; it comes at once, so the
  // round closes when it is full. join_timeout leaves room for a loaded machine.
  auto agent = [&](const std::string& endpoint) {
    return pltrunCommand(concat(elasticArgs("1:2", 2, endpoint, "--rdzv_conf=timeout=60", runId, backend),
                                {kScript, "join", dir.path(), "tcp"}));
  };
  std::unique_ptr<EtcdCluster> etcd;  // stopped and reaped after the agents
  std::unique_ptr<ChildProcess> first;
  std::unique_ptr<ChildProcess> second;
  if (backend == "etcd") {
    etcd = std::make_unique<EtcdCluster>(1);
    first = std::make_unique<ChildProcess>(agent(etcd->endpointsText()), env);
    second = std::make_unique<ChildProcess>(agent(etcd->endpointsText()), env);
  } else {
    first = std::make_unique<ChildProcess>(agent("127.0.0.1:0"), env);  // hosts the store on a free port
    const int port = rendezvousStorePort(*first);
    INFO("the first agent's stderr: " << first->stderrSoFar());
    REQUIRE(port != 0);
    second = std::make_unique<ChildProcess>(agent("127.0.0.1:" + std::to_string(port)), env);
  }
  const Finished one = first->wait(kJob);
  const Finished two = second->wait(60s);
  INFO("agent 1: " << describe(one) << "\nagent 2: " << describe(two));
  REQUIRE(one.status == 0);
  REQUIRE(two.status == 0);
  const std::vector<json> records = joinRecords(dir.path());
  checkOneWorld(records, 4);
  checkWorkersGone(records);
  std::set<std::string> groupRanks;
  for (const json& record : records) {
    const std::string master =
        record.at("MASTER_ADDR").get<std::string>() + ":" + record.at("MASTER_PORT").get<std::string>();
    CHECK(record.at("init_method").get<std::string>() == "tcp://" + master);
    CHECK(record.at("TORCHELASTIC_RUN_ID") == runId);
    CHECK(record.at("LOCAL_WORLD_SIZE") == "2");
    groupRanks.insert(record.at("GROUP_RANK").get<std::string>());
  }
  CHECK(groupRanks == std::set<std::string>{"0", "1"});  // both agents' workers, two each
}

TEST_CASE("launcher case: a worker that raises under --nnodes=1:2 with --max-restarts=0 fails the job",
          "[torch][launcher_cases]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  TempDir dir;
  INFO("torch " << torch.version);
  Finished run =
      runTorch(torch, dir,
               concat(elasticArgs("1:2", 4, "127.0.0.1:0", "--rdzv-conf='join_timeout=5,last_call_timeout=1,timeout=5'",
                                  "cases" + std::to_string(getpid())),
                      {"--max-restarts=0", kScript, "raise"}));
  INFO(describe(run));
  CHECK(run.status == 1);
  CHECK_FALSE(run.timedOut);
  // torch's @record error file, in pltrun's report; no second attempt.
  CHECK(contains(run.err, "error: RuntimeError: worker "));
  CHECK(contains(run.err, " gives up\n"));
  CHECK_FALSE(contains(run.err, "restarting the worker group"));
}

TEST_CASE("launcher case: torch.distributed.is_torchelastic_launched() is True under pltrun, False without",
          "[torch][launcher_cases]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  TempDir dir;
  INFO("torch " << torch.version);
  Finished run = runTorch(torch, dir,
                          {"--run-path", "--nnodes=1", "--nproc-per-node=1", "--monitor-interval=1", kScript,
                           "launched", dir / "under_pltrun"});
  INFO(describe(run));
  REQUIRE(run.status == 0);
  CHECK(readFile(dir / "under_pltrun") == "True");

  // The same script started by hand, outside any launcher (and outside this test's, if any).
  ChildProcess alone({torch.pythonExec, kScript, "launched", dir / "alone"},
                     {"PLTRUN_TORCH2_BINDS=" + dir.path(), "TORCHELASTIC_RUN_ID"});
  const Finished bare = alone.wait(kJob);
  INFO("without pltrun: " << describe(bare));
  REQUIRE(bare.status == 0);
  CHECK(readFile(dir / "alone") == "False");
}

// torch 1.13's torchrun knows neither TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE nor
// --log-line-prefix-template (Debian's 1.13 has neither; 2.6 reads only the variable, 2.14
// both); pltrun reads both whatever torch the workers run, so this case runs with 1.13
// workers too.
TEST_CASE("launcher case: --redirect=3 --tee=3 with the prefix template show and keep every worker's lines",
          "[torch][launcher_cases]") {
  const TorchRuntime torch = GENERATE(torch113(), torch26(), torch214());
  TempDir dir;
  INFO("torch " << torch.version);
  const std::string envTemplate = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE=[rank${rank}]: ";

  // test_run.py's: both streams to the logs and the console, prefixed by the variable's
  // template; no --log-dir, so the logs go to a new temporary directory (under TMPDIR).
  Finished teed = runTorch(torch, dir,
                           {"--nnodes=1", "--nproc-per-node=4", "--rdzv-id=captured", "--redirect=3", "--tee=3",
                            "--monitor-interval=1", "--start-method=spawn", kScript, "chatter"},
                           {envTemplate});
  INFO("--redirect=3 --tee=3: " << describe(teed));
  REQUIRE(teed.status == 0);
  const std::string root = announcedLogRoot(teed.err);
  REQUIRE_FALSE(root.empty());
  CHECK(root.rfind(dir.path(), 0) == 0);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string r = std::to_string(rank);
    CHECK(contains(teed.out, "[rank" + r + "]: creating output of rank " + r + "\n"));
    CHECK(contains(teed.err, "[rank" + r + "]: warning from rank " + r + "\n"));
    CHECK(readFile(root + "/attempt_0/" + r + "/stdout.log") == "creating output of rank " + r + "\n");
    CHECK(contains(readFile(root + "/attempt_0/" + r + "/stderr.log"), "warning from rank " + r + "\n"));
  }
  CHECK_FALSE(contains(teed.out, "[rank 0]"));  // the template replaced pltrun's own prefix

  // stdout to the logs only, stderr teed; --log-line-prefix-template wins over the variable.
  Finished split = runTorch(torch, dir,
                            {"--nproc-per-node=2", "-r", "1", "-t", "2", "--log-dir", dir / "logs", "--rdzv-id",
                             "split", "--log-line-prefix-template", "${role_name}${local_rank}> ", kScript, "chatter"},
                            {envTemplate});
  INFO("-r 1 -t 2 --log-line-prefix-template: " << describe(split));
  REQUIRE(split.status == 0);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string r = std::to_string(rank);
    CHECK(contains(split.err, "default" + r + "> warning from rank " + r + "\n"));
    CHECK_FALSE(contains(split.out, "creating output of rank " + r));
    CHECK(readFile(dir / ("logs/split/attempt_0/" + r + "/stdout.log")) == "creating output of rank " + r + "\n");
  }
  CHECK_FALSE(contains(split.err, "[rank0]: "));
}
