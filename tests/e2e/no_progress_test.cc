// Restarts that make no progress stop (--max-no-progress-restarts, docs/USAGE.md "Hangs"): real
// pltrun, real workers that send their step to $PLTRUN_HEARTBEAT. A job whose rank crashes
// at the same step every attempt stops after K restarts with exit status 125, one line, a
// no_progress event and failure.json's no_progress; one that gets further every attempt,
// one that sends no counters and one with the check off restart until --max-restarts. On a
// single node, with two elastic agents, and with real torch DDP (1.13, 2.6 and 2.14).

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/elastic_job.h"
#include "e2e/torch_runtimes.h"
#include "helpers/child_process.h"
#include "helpers/json_lines.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr int kNoProgressStatus = 125;

// A worker that beats steps from where its attempt "resumes" (`resume` of the restart
// count) up to `crash` (also an expression), the last rank slowly, the others at once; the
// last rank then exits with 3. `beats`: which ranks send heartbeats (a Python condition), or none.
std::vector<std::string> crashingWorker(const std::string& resume, const std::string& crash,
                                        const std::string& beats = "True") {
  const std::string source =
      "import os, socket, sys, time\n"
      "rank = int(os.environ['RANK'])\n"
      "restart = int(os.environ['TORCHELASTIC_RESTART_COUNT'])\n"
      "last = int(os.environ['WORLD_SIZE']) - 1\n"
      "start = " +
      resume +
      "\n"
      "crash = " +
      crash +
      "\n"
      "for step in range(start, crash + 1):\n" +
      (!beats.empty() ? "    if 'PLTRUN_HEARTBEAT' in os.environ and (" + beats +
                            "):\n"
                            "        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(str(step).encode(), "
                            "os.environ['PLTRUN_HEARTBEAT'])\n"
                      : "") +
      "    time.sleep(0.05 if rank == last else 0)\n"
      "if rank == last:\n"
      "    time.sleep(1)\n"  // the other ranks (another node's, started later) reach the step too
      "    sys.exit(3)\n"
      "time.sleep(60)\n";
  return {"--no-python", "/usr/bin/python3", "-c", source};
}

std::vector<std::string> with(std::vector<std::string> flags, const std::vector<std::string>& program) {
  flags.insert(flags.end(), program.begin(), program.end());
  return flags;
}

// The attempts (or rounds) whose workers started, in events.jsonl.
int attemptsStarted(const std::vector<json>& events, const std::string& field) {
  int attempts = 0;
  for (const json& event : eventsNamed(events, "worker_started")) {
    attempts = std::max(attempts, event.at(field).get<int>() + 1);
  }
  return attempts;
}

// The run directories under `logDir` that hold `file` (one agent's each).
std::vector<std::string> runDirectoriesWith(const std::string& logDir, const std::string& file) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(logDir)) {
    if (entry.path().filename() == file && !fs::is_symlink(entry.path().parent_path())) {
      found.push_back(entry.path().parent_path().string());
    }
  }
  return found;
}

size_t occurrences(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("no progress: a crash at the same step every attempt stops after K restarts with status 125",
          "[no_progress]") {
  TempDir dir;
  const Finished run = runPltrun(with({"--nproc-per-node", "2", "--max-restarts", "10", "--max-no-progress-restarts",
                                       "2", "--log-dir", dir / "logs", "--rdzv-id", "np", "--term-timeout", "5"},
                                      crashingWorker("0", "5")));
  INFO(run.err);
  CHECK(run.status == kNoProgressStatus);
  const std::string line =
      "no progress in 2 restarts in a row: no rank passed step 5 (reached in attempt 0); not restarting again "
      "(--max-no-progress-restarts 2)";
  CHECK(occurrences(run.err, line) == 1);
  CHECK(occurrences(run.err, "restarting the worker group") == 2);
  CHECK_THAT(run.err, Catch::Contains("rank 1"));  // the last attempt's failure report

  const std::string root = dir / "logs/np";
  const std::vector<json> events = readJsonLines(root + "/events.jsonl");
  CHECK(attemptsStarted(events, "attempt") == 3);
  const std::vector<json> verdicts = eventsNamed(events, "no_progress");
  REQUIRE(verdicts.size() == 1);
  CHECK(verdicts[0].at("counter") == 5);
  CHECK(verdicts[0].at("counter_attempt") == 0);
  CHECK(verdicts[0].at("restarts_without_progress") == 2);
  CHECK(verdicts[0].at("max_no_progress_restarts") == 2);
  CHECK(verdicts[0].at("attempt") == 2);
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().at("event") == "job_finished");
  CHECK(events.back().at("status") == kNoProgressStatus);
  CHECK(events.back().at("attempts") == 3);

  const json failure = json::parse(readFile(root + "/failure.json"));
  CHECK(failure.at("no_progress").at("counter") == 5);
  CHECK(failure.at("no_progress").at("attempt") == 2);
  CHECK(failure.at("root_cause").at("rank") == 1);
  CHECK(failure.at("root_cause").at("attempt") == 2);
  CHECK(failure.at("root_cause").at("exit_code") == 3);
}

TEST_CASE("no progress: a job that gets further every attempt restarts until --max-restarts", "[no_progress]") {
  TempDir dir;
  // Each attempt resumes where the last crashed and crashes two steps further on.
  const Finished run = runPltrun(with({"--nproc-per-node", "2", "--max-restarts", "3", "--max-no-progress-restarts",
                                       "1", "--log-dir", dir / "logs", "--rdzv-id", "p", "--term-timeout", "5"},
                                      crashingWorker("2 * restart", "2 * restart + 2")));
  INFO(run.err);
  CHECK(run.status == 3);  // the worker's own status: no restart left
  CHECK_THAT(run.err, !Catch::Contains("no progress"));
  CHECK(occurrences(run.err, "restarting the worker group") == 3);
  const std::vector<json> events = readJsonLines(dir / "logs/p/events.jsonl");
  CHECK(attemptsStarted(events, "attempt") == 4);
  CHECK(eventsNamed(events, "no_progress").empty());
  CHECK_FALSE(json::parse(readFile(dir / "logs/p/failure.json")).contains("no_progress"));
}

TEST_CASE("no progress: without heartbeats, or with --max-no-progress-restarts 0, nothing changes", "[no_progress]") {
  const bool beats = GENERATE(false, true);
  const std::string limit = beats ? "0" : "1";
  INFO("heartbeats " << beats << ", --max-no-progress-restarts " << limit);
  TempDir dir;
  const Finished run = runPltrun(with({"--nproc-per-node", "2", "--max-restarts", "3", "--max-no-progress-restarts",
                                       limit, "--log-dir", dir / "logs", "--rdzv-id", "off", "--term-timeout", "5"},
                                      crashingWorker("0", "2", beats ? "True" : "")));
  INFO(run.err);
  CHECK(run.status == 3);
  CHECK_THAT(run.err, !Catch::Contains("no progress"));
  CHECK(attemptsStarted(readJsonLines(dir / "logs/off/events.jsonl"), "attempt") == 4);
}

TEST_CASE("no progress: two elastic agents stop the whole job after K rounds", "[no_progress][elastic]") {
  // Every node's ranks beat, or only those of the node of ranks 0-1 (the other's rank 3
  // fails): that node decides, and the other learns it from the closed job.
  const bool everyNode = GENERATE(true, false);
  INFO("heartbeats from " << (everyNode ? "every node" : "one node"));
  TempDir dir;
  // One node's rank crashing round after round would be blamed (--max-node-blames) before
  // the verdict: off, as this is about the verdict.
  ElasticJob job(dir, "2", "np-elastic",
                 {"--max-restarts", "10", "--max-no-progress-restarts", "2", "--max-node-blames", "0"},
                 crashingWorker("0", "4", everyNode ? "True" : "rank < 2"));
  job.start();
  job.start();
  const std::vector<Finished> agents = job.waitAll(90s);
  // The deciding agent's own line (the others quote it in "the job is over: ...").
  const std::string line =
      "pltrun: no progress in 2 restarts in a row: no rank passed step 4 (reached in round 0); not restarting again "
      "(--max-no-progress-restarts 2)";
  int said = 0;
  for (const Finished& agent : agents) {
    INFO(agent.err);
    CHECK_FALSE(agent.timedOut);
    CHECK(agent.status == kNoProgressStatus);
    CHECK(occurrences(agent.err, line) <= 1);
    said += static_cast<int>(occurrences(agent.err, line));
    if (occurrences(agent.err, line) == 0) {
      CHECK_THAT(agent.err, Catch::Contains("the job is over: node ") &&
                                Catch::Contains("was stopped (no progress in 2 restarts in a row"));
    }
  }
  if (everyNode) {
    CHECK(said >= 1);
  } else {
    CHECK(said == 1);
  }
  int verdicts = 0;
  for (size_t index = 0; index < job.size(); ++index) {
    const std::vector<json> events = agentEvents(dir, job.runId(), job.agent(index).pid());
    CHECK(attemptsStarted(events, "round") == 3);
    REQUIRE_FALSE(events.empty());
    CHECK(events.back().at("event") == "job_finished");
    CHECK(events.back().at("status") == kNoProgressStatus);
    for (const json& verdict : eventsNamed(events, "no_progress")) {
      ++verdicts;
      CHECK(verdict.at("counter") == 4);
      CHECK(verdict.at("round") == 2);
    }
  }
  CHECK(verdicts == said);
  // Each deciding agent's failure.json has the verdict.
  const std::vector<std::string> reports = runDirectoriesWith(dir / "logs", "failure.json");
  int withVerdict = 0;
  for (const std::string& run : reports) {
    const json failure = json::parse(readFile(run + "/failure.json"));
    if (!failure.contains("no_progress")) continue;
    ++withVerdict;
    CHECK(failure.at("no_progress").at("counter") == 4);
  }
  CHECK(withVerdict == said);
}

namespace {

const std::string kTorchScript = std::string(TESTS_SOURCE_DIR) + "/e2e/torch_ddp_train.py";

// 4 torch DDP workers on one node; rank 3 is SIGKILLed at `crash` ("--crash-at 5" or
// "--crash-after 3") every attempt.
Finished runTorch(const TorchRuntime& torch, const TempDir& dir, const std::vector<std::string>& flags,
                  const std::vector<std::string>& crash) {
  std::vector<std::string> args = {"--nproc-per-node", "4", "--log-dir",      dir / "logs",
                                   "--rdzv-id",        "t", "--term-timeout", "5"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {kTorchScript, dir / "train", "--steps", "40"});
  args.insert(args.end(), crash.begin(), crash.end());
  ChildProcess pltrun(pltrunCommand(args), torch.workerEnvironment(dir.path()));
  return pltrun.wait(240s);
}

void checkTorchStopsWithoutProgress(const TorchRuntime& torch) {
  if (!torch.available()) return;
  INFO("torch " << torch.version);
  TempDir dir;
  const Finished run =
      runTorch(torch, dir, {"--max-restarts", "10", "--max-no-progress-restarts", "2"}, {"--crash-at", "5"});
  INFO(run.err);
  CHECK_FALSE(run.timedOut);
  CHECK(run.status == kNoProgressStatus);
  CHECK(occurrences(run.err,
                    "no progress in 2 restarts in a row: no rank passed step 5 (reached in attempt 0); not restarting "
                    "again (--max-no-progress-restarts 2)") == 1);
  const std::vector<json> events = readJsonLines(dir / "logs/t/events.jsonl");
  CHECK(attemptsStarted(events, "attempt") == 3);
  const std::vector<json> verdicts = eventsNamed(events, "no_progress");
  REQUIRE(verdicts.size() == 1);
  CHECK(verdicts[0].at("counter") == 5);
  CHECK(events.back().at("status") == kNoProgressStatus);
  const json failure = json::parse(readFile(dir / "logs/t/failure.json"));
  CHECK(failure.at("no_progress").at("counter") == 5);
  CHECK(failure.at("root_cause").at("rank") == 3);
  // SIGKILLed: the signal, or 137 from the chroot's shell that ran the worker.
  const json& root = failure.at("root_cause");
  CHECK((root.at("signal") == "SIGKILL" || root.at("exit_code") == 128 + 9));
}

}  // namespace

TEST_CASE("no progress: torch 1.13 DDP crashing at the same step every attempt stops", "[no_progress][torch]") {
  checkTorchStopsWithoutProgress(torch113());
}

TEST_CASE("no progress: torch 2.6 DDP crashing at the same step every attempt stops", "[no_progress][torch][torch2]") {
  checkTorchStopsWithoutProgress(torch26());
}

TEST_CASE("no progress: torch 2.14 DDP crashing at the same step every attempt stops", "[no_progress][torch][torch2]") {
  checkTorchStopsWithoutProgress(torch214());
}

TEST_CASE("no progress: torch 1.13 DDP that resumes and gets further every attempt restarts to --max-restarts",
          "[no_progress][torch]") {
  const TorchRuntime torch = torch113();
  if (!torch.available()) return;
  TempDir dir;
  const Finished run =
      runTorch(torch, dir, {"--max-restarts", "2", "--max-no-progress-restarts", "1"}, {"--crash-after", "3"});
  INFO(run.err);
  CHECK_FALSE(run.timedOut);
  CHECK(run.status == 128 + 9);  // rank 3's SIGKILL: no restart left
  CHECK_THAT(run.err, !Catch::Contains("no progress"));
  const std::vector<json> events = readJsonLines(dir / "logs/t/events.jsonl");
  CHECK(attemptsStarted(events, "attempt") == 3);
  CHECK(eventsNamed(events, "no_progress").empty());
}

namespace {

// Two elastic agents of 2 torch DDP workers each (c10d, loopback); rank 3 is SIGKILLed at
// step 5 every round. Both nodes' ranks beat, so both come to the verdict in round 2.
void checkElasticTorchStopsWithoutProgress(const TorchRuntime& torch) {
  if (!torch.available()) return;
  INFO("torch " << torch.version);
  TempDir dir;
  const auto args = [&](const std::string& endpoint) {
    return pltrunCommand({"--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", endpoint, "--rdzv-id", "te",
                          "--rdzv-conf", "join_timeout=60", "--log-dir", dir / "logs", "--term-timeout", "5",
                          "--max-restarts", "10", "--max-no-progress-restarts", "2",
                          // One node's rank crashing round after round would be blamed
                          // (--max-node-blames) before the verdict: off, as this is about the verdict.
                          "--max-node-blames", "0", kTorchScript, dir / "train", "--steps", "40", "--crash-at", "5"});
  };
  const std::vector<std::string> env = torch.workerEnvironment(dir.path());
  ChildProcess host(args("127.0.0.1:0"), env);
  const int port = rendezvousStorePort(host);
  INFO("the first agent's stderr: " << host.stderrSoFar());
  REQUIRE(port != 0);
  ChildProcess joiner(args("127.0.0.1:" + std::to_string(port)), env);
  const std::vector<Finished> agents = {host.wait(240s), joiner.wait(30s)};
  int said = 0;
  for (const Finished& agent : agents) {
    INFO(agent.err);
    CHECK_FALSE(agent.timedOut);
    CHECK(agent.status == kNoProgressStatus);
    said +=
        static_cast<int>(occurrences(agent.err, "pltrun: no progress in 2 restarts in a row: no rank passed step 5"));
  }
  CHECK(said >= 1);
  const std::vector<json> events = agentEvents(dir, "te", host.pid());
  CHECK(attemptsStarted(events, "round") == 3);
  CHECK(events.back().at("status") == kNoProgressStatus);
}

}  // namespace

TEST_CASE("no progress: torch 1.13 DDP on two elastic agents crashing at the same step every round stops",
          "[no_progress][torch][elastic]") {
  checkElasticTorchStopsWithoutProgress(torch113());
}

TEST_CASE("no progress: torch 2.14 DDP on two elastic agents crashing at the same step every round stops",
          "[no_progress][torch][torch2][elastic]") {
  checkElasticTorchStopsWithoutProgress(torch214());
}
