// `--metrics` on live jobs of the real pltrun (issue 47): a single node's 4 Python workers
// beating with counters (rank_info's pids and fake GPUs, restarts 0 -> 1 after a crash, the
// heartbeat age of a rank that stops beating), two elastic agents (rendezvous rounds, the
// exit and node_lost causes every node counts, `pltrun status`'s step times and goodput),
// and a torch DDP job restarted under each torch, with and without --preload.

#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/elastic_job.h"
#include "e2e/metrics_scrape.h"
#include "e2e/torch_runtimes.h"
#include "helpers/child_process.h"
#include "helpers/json_lines.h"
#include "helpers/other_user.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string kWorkers = std::string(TESTS_SOURCE_DIR) + "/e2e/metrics_workers.py";
const std::string kTorchScript = std::string(TESTS_SOURCE_DIR) + "/e2e/torch_ddp_train.py";

void touch(const std::string& path) { std::ofstream(path) << "1"; }

// Scrapes `port` until `done` holds for the text (30 s at most); the last text either way.
std::string scrapeUntil(int port, const std::function<bool(const std::string&)>& done,
                        std::chrono::milliseconds timeout = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string text;
  for (;;) {
    text = scrapeMetrics(port);
    if (done(text) || std::chrono::steady_clock::now() > deadline) return text;
    std::this_thread::sleep_for(100ms);
  }
}

bool hasValue(const std::string& text, const std::string& name, const Labels& labels, double value) {
  return sampleValue(text, name, labels) == std::optional<double>(value);
}

// The pids of the workers pltrun started last (worker_started events of the newest
// attempt or round), by rank.
std::map<int, pid_t> startedPids(const std::string& events, const char* attemptField) {
  std::map<int, pid_t> pids;
  int newest = -1;
  for (const json& event : readJsonLines(events)) {
    if (event["event"] != "worker_started") continue;
    const int attempt = event[attemptField].get<int>();
    if (attempt > newest) pids.clear();
    newest = std::max(newest, attempt);
    pids[event["rank"].get<int>()] = event["pid"].get<pid_t>();
  }
  return pids;
}

// pltrun_rank_info's pid of each rank in `text`.
std::map<int, pid_t> infoPids(const std::string& text) {
  std::map<int, pid_t> pids;
  for (const auto& [labels, value] : samples(text, "pltrun_rank_info")) {
    pids[std::stoi(labels.at("rank"))] = static_cast<pid_t>(std::stol(labels.at("pid")));
  }
  return pids;
}

double heartbeatAge(const std::string& text, int rank) {
  return sampleValue(text, "pltrun_rank_heartbeat_age_seconds", {{"rank", std::to_string(rank)}}).value_or(-1);
}

double progress(const std::string& text, int rank) {
  return sampleValue(text, "pltrun_rank_progress", {{"rank", std::to_string(rank)}}).value_or(-1);
}

}  // namespace

TEST_CASE("metrics: a 4-worker job's ranks, pids and GPUs, a restart after a crash, a rank that stops beating",
          "[metrics]") {
  TempDir dir;
  const std::string uuids[] = {"GPU-aa", "GPU-bb", "GPU-cc", "GPU-dd"};
  ChildProcess pltrun(
      pltrunCommand({"--nproc-per-node", "4", "--metrics", "127.0.0.1:0", "--max-restarts", "1", "--term-timeout", "5",
                     "--log-dir", dir / "logs", "--rdzv-id", "metered", "--no-python", "/usr/bin/python3", kWorkers,
                     dir.path()}),
      {"PLTRUN_FAKE_GPUS=4", "PLTRUN_FAKE_GPU_UUIDS=GPU-aa,GPU-bb,GPU-cc,GPU-dd", "TMPDIR=" + dir.path()});
  const int port = metricsPort(pltrun);
  INFO(pltrun.stderrSoFar());
  REQUIRE(port != 0);
  const std::string events = dir / "logs/metered/events.jsonl";

  // Every rank has beaten: each wrote its pid file before its first heartbeat.
  std::string text = scrapeUntil(port, [](const std::string& t) {
    bool allBeat = infoPids(t).size() == 4;
    for (int rank = 0; rank < 4; ++rank) allBeat = allBeat && heartbeatAge(t, rank) >= 0;
    return allBeat;
  });
  CHECK(hasValue(text, "pltrun_restarts_total", {{"cause", "exit"}, {"job", "metered"}}, 0));
  CHECK(hasValue(text, "pltrun_workers", {{"state", "running"}}, 4));
  const std::map<int, pid_t> first = startedPids(events, "attempt");
  CHECK(infoPids(text) == first);
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    const auto info = samples(text, "pltrun_rank_info", {{"rank", std::to_string(rank)}});
    REQUIRE(info.size() == 1);
    CHECK(info[0].first.at("local_rank") == std::to_string(rank));
    CHECK(info[0].first.at("gpu") == std::to_string(rank));
    CHECK(info[0].first.at("UUID") == uuids[rank]);
    CHECK(std::stol(readFile(dir / ("pid_0_" + std::to_string(rank)))) == first.at(rank));
  }

  touch(dir / "crash");  // rank 1 exits with 3: the restart's cause is "exit"
  text = scrapeUntil(port, [](const std::string& t) {
    return hasValue(t, "pltrun_restarts_total", {{"cause", "exit"}}, 1) && infoPids(t).size() == 4 &&
           heartbeatAge(t, 3) >= 0;
  });
  CHECK(hasValue(text, "pltrun_restarts_total", {{"cause", "exit"}}, 1));
  CHECK(hasValue(text, "pltrun_restarts_total", {{"cause", "signal"}}, 0));
  const std::map<int, pid_t> second = startedPids(events, "attempt");
  CHECK(infoPids(text) == second);
  CHECK(second.at(1) != first.at(1));

  touch(dir / "silence");  // rank 3 stops beating and lives on
  // No bound on how soon it notices, nor on how often the others beat on a loaded machine:
  // once rank 3 has been silent for a second, its age grows with the clock, while the
  // others' counters go on advancing and their ages stay below its own.
  const std::string before = scrapeUntil(port, [](const std::string& t) { return heartbeatAge(t, 3) >= 1.0; });
  REQUIRE(heartbeatAge(before, 3) >= 1.0);
  std::this_thread::sleep_for(1500ms);
  const std::string after = scrapeMetrics(port);
  INFO(before << after);
  CHECK(heartbeatAge(after, 3) >= heartbeatAge(before, 3) + 1.4);
  CHECK(progress(after, 3) == progress(before, 3));
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(progress(after, rank) > progress(before, rank));
    CHECK(heartbeatAge(after, rank) < heartbeatAge(after, 3));
  }

  touch(dir / "done");
  const Finished run = pltrun.wait(60s);
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK_THAT(run.err, Catch::Contains("metrics at http://127.0.0.1:" + std::to_string(port) + "/metrics"));
}

TEST_CASE("metrics: without --metrics nothing listens", "[metrics]") {
  const Finished plain = runPltrun({"--nproc-per-node", "1", "--no-python", "/bin/true"});
  CHECK(plain.status == 0);
  CHECK_THAT(plain.err, !Catch::Contains("metrics at"));
}

// Another local user who takes the port first (by chance, or to keep jobs from starting)
// costs the job its metrics, never its run: one warning line, and the workers start.
TEST_CASE("metrics: a port another local user holds is one warning line, and the job runs without metrics",
          "[metrics][other_user]") {
  if (!canActAsOtherUsers()) {
    WARN("skipped: needs root to act as other users");
    return;
  }
  TempDir dir;
  ChildProcess holder(asUser(otherUser(1), {"/usr/bin/python3", "-c",
                                            "import socket, sys, time\n"
                                            "s = socket.socket()\n"
                                            "s.bind(('127.0.0.1', 0))\n"
                                            "s.listen()\n"
                                            "print('holding', s.getsockname()[1], file=sys.stderr, flush=True)\n"
                                            "time.sleep(60)\n"}));
  const std::optional<std::string> held = holder.waitForStderr("\n", 30s);
  REQUIRE(held);
  const std::string port = held->substr(held->find(' ') + 1, held->find('\n') - held->find(' ') - 1);
  INFO("held port " << port);

  const Finished run = runPltrun({"--nproc-per-node", "1", "--metrics", "127.0.0.1:" + port, "--no-python", "/bin/sh",
                                  "-c", "touch " + (dir / "started")});
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK(std::filesystem::exists(dir / "started"));
  CHECK_THAT(run.err, Catch::Contains("cannot listen on 127.0.0.1:" + port) &&
                          Catch::Contains("the job runs without metrics") && !Catch::Contains("metrics at"));
  holder.signal(SIGTERM);
  holder.wait(30s);
}

TEST_CASE("metrics: two elastic agents count rounds, a crash's exit and a lost node, and status shows step times",
          "[metrics][elastic]") {
  TempDir dir;
  ElasticJob job(dir, "1:2", "metered", {"--max-restarts", "3", "--metrics", "127.0.0.1:0"},
                 {"--no-python", "/usr/bin/python3", kWorkers, dir.path()});
  ChildProcess& host = job.start();
  ChildProcess& other = job.start();
  const int hostPort = metricsPort(host);
  const int otherPort = metricsPort(other);
  INFO(host.stderrSoFar() << other.stderrSoFar());
  REQUIRE(hostPort != 0);
  REQUIRE(otherPort != 0);
  for (const int port : {hostPort, otherPort}) {
    const std::string text = scrapeUntil(port, [](const std::string& t) { return infoPids(t).size() == 2; });
    CHECK(sampleValue(text, "pltrun_rendezvous_rounds_total").value_or(0) >= 1);
    CHECK(hasValue(text, "pltrun_restarts_total", {{"cause", "exit"}}, 0));
  }

  touch(dir / "crash");  // rank 1 exits with 3 in round 0: every node counts "exit"
  for (const int port : {hostPort, otherPort}) {
    const std::string text = scrapeUntil(port, [](const std::string& t) {
      return hasValue(t, "pltrun_restarts_total", {{"cause", "exit"}}, 1) && infoPids(t).size() == 2;
    });
    CHECK(hasValue(text, "pltrun_restarts_total", {{"cause", "exit"}}, 1));
    CHECK(hasValue(text, "pltrun_restarts_total", {{"cause", "other"}}, 0));
    CHECK(sampleValue(text, "pltrun_rendezvous_rounds_total").value_or(0) >= 2);
  }

  // Each agent publishes its ranks' step times and its goodput every 2 s.
  const std::string endpoint = "127.0.0.1:" + std::to_string(job.port());
  json status;
  for (int attempt = 0; attempt < 40; ++attempt) {
    const Finished run = runPltrun({"status", "--rdzv-endpoint", endpoint, "--rdzv-id", "metered", "--json"});
    status = json::parse(run.out.empty() ? "{}" : run.out);
    const bool published = status.contains("nodes") && status["nodes"].size() == 2 &&
                           status["nodes"][0]["step_s"].size() == 2 && status["nodes"][1]["step_s"].size() == 2 &&
                           !status["nodes"][0]["goodput"].is_null() && !status["goodput"].is_null();
    if (published) break;
    std::this_thread::sleep_for(500ms);
  }
  INFO(status.dump());
  REQUIRE(status["nodes"].size() == 2);
  for (const json& node : status["nodes"]) {
    for (const auto& [rank, seconds] : node["step_s"].items()) CHECK(seconds.get<double>() > 0);
    CHECK(node["goodput"]["elapsed_s"].get<double>() > 0);
  }
  CHECK(status["goodput"]["lost_s"].get<double>() >= 0);
  const Finished text = runPltrun({"status", "--rdzv-endpoint", endpoint, "--rdzv-id", "metered"});
  CHECK_THAT(text.out, Catch::Contains(" s/step") && Catch::Contains("  goodput: "));

  other.signal(SIGKILL);  // its node is lost: the host re-forms alone and counts node_lost
  const std::string alone = scrapeUntil(hostPort, [](const std::string& t) {
    return hasValue(t, "pltrun_restarts_total", {{"cause", "node_lost"}}, 1);
  });
  CHECK(hasValue(alone, "pltrun_restarts_total", {{"cause", "node_lost"}}, 1));
  CHECK(hasValue(alone, "pltrun_restarts_total", {{"cause", "exit"}}, 1));
  touch(dir / "done");
  const Finished hostEnd = host.wait(kAgentExit);
  INFO(hostEnd.err);
  CHECK(hostEnd.status == 0);
}

namespace {

// torch_ddp_train.py's rank 3 SIGKILLs itself at step 5 of the first attempt; the restarted
// workers train to the end, then wait for the test's word while it scrapes.
void trainUnderMetrics(const TorchRuntime& torch, bool preload) {
  if (!torch.available()) return;
  TempDir dir;
  std::vector<std::string> args = {"--nproc-per-node", "4",          "--metrics",      "127.0.0.1:0",
                                   "--max-restarts",   "1",          "--term-timeout", "5",
                                   "--log-dir",        dir / "logs", "--rdzv-id",      "torchmetered"};
  if (preload) args.insert(args.end(), {"--preload", "torch"});
  args.insert(args.end(),
              {kTorchScript, dir.path(), "--steps", "10", "--fail-at", "5", "--linger-until", dir / "release"});
  ChildProcess pltrun(pltrunCommand(args), torch.workerEnvironment(dir.path()));
  const int port = metricsPort(pltrun, 120s);
  INFO("torch " << torch.version << (preload ? ", --preload torch" : "") << "\n" << pltrun.stderrSoFar());
  REQUIRE(port != 0);
  REQUIRE(waitForFile(dir / "result.json", 240s));
  const std::string text = scrapeMetrics(port);
  const std::map<int, pid_t> started = startedPids(dir / "logs/torchmetered/events.jsonl", "attempt");
  CHECK(started.size() == 4);
  CHECK(infoPids(text) == started);
  // Cold through a chroot's wrapper, the worker pltrun started is the wrapper, which exits
  // with 137 when its python is SIGKILLed: an exit, as for any worker run through a shell.
  // Forked from the zygote (--preload), or on Debian's own python3, the worker is python.
  const bool pythonIsTheWorker = preload || torch.pythonExec == "/usr/bin/python3";
  CHECK(hasValue(text, "pltrun_restarts_total", {{"cause", pythonIsTheWorker ? "signal" : "exit"}}, 1));
  CHECK(hasValue(text, "pltrun_restarts_total", {{"cause", pythonIsTheWorker ? "exit" : "signal"}}, 0));
  CHECK(hasValue(text, "pltrun_restarts_total", {{"cause", "other"}}, 0));
  if (pythonIsTheWorker) {
    for (int rank = 0; rank < 4; ++rank) {
      CHECK(std::stol(readFile(dir / ("pids/round1_rank" + std::to_string(rank)))) == started.at(rank));
    }
  }
  touch(dir / "release");
  const Finished run = pltrun.wait(120s);
  INFO(run.err);
  CHECK(run.status == 0);
}

}  // namespace

TEST_CASE("metrics torch: a restarted DDP job's ranks and restarts, torch 1.13", "[metrics][torch]") {
  trainUnderMetrics(torch113(), false);
  trainUnderMetrics(torch113(), true);
}

TEST_CASE("metrics torch: a restarted DDP job's ranks and restarts, torch 2.6", "[metrics][torch]") {
  trainUnderMetrics(torch26(), false);
  trainUnderMetrics(torch26(), true);
}

TEST_CASE("metrics torch: a restarted DDP job's ranks and restarts, torch 2.14", "[metrics][torch]") {
  trainUnderMetrics(torch214(), false);
  trainUnderMetrics(torch214(), true);
}
