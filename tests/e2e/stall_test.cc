// Hangs without torch (docs/USAGE.md "Hangs"): what counts as a stall and what never does, a C++
// worker beating through libpltrun, hostile datagrams, and torch's FileTimer watchdog with
// real torch workers. The torch DDP stalls are cells of the torch matrix.

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e/elastic_job.h"
#include "e2e/torch_runtimes.h"
#include "helpers/child_process.h"
#include "helpers/json_lines.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
namespace fs = std::filesystem;

namespace {

// A Python worker (Debian's python3, no torch needed) given as `-c` source.
std::vector<std::string> python(const std::string& source) { return {"--no-python", "/usr/bin/python3", "-c", source}; }

std::vector<std::string> with(std::vector<std::string> flags, const std::vector<std::string>& program) {
  flags.insert(flags.end(), program.begin(), program.end());
  return flags;
}

const std::string kBeat =
    "import os, socket, sys, time\n"
    "def beat(step):\n"
    "    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(str(step).encode(), os.environ['PLTRUN_HEARTBEAT'])\n"
    "rank = int(os.environ['RANK'])\n";

}  // namespace

TEST_CASE("stall: PLTRUN_HEARTBEAT is set where something reads it: with --stall-timeout, not in a plain run",
          "[stall]") {
  const std::vector<std::string> probe =
      python("import os; print('heartbeat' if 'PLTRUN_HEARTBEAT' in os.environ else 'none')");
  Finished plain = runPltrun(with({"--nproc-per-node", "1"}, probe));
  Finished watched = runPltrun(with({"--nproc-per-node", "1", "--stall-timeout", "30"}, probe));
  INFO(plain.err << watched.err);
  CHECK(plain.out == "[rank 0] none\n");
  CHECK(watched.out == "[rank 0] heartbeat\n");
}

TEST_CASE("stall: a worker that never sends a heartbeat is never stopped", "[stall]") {
  Finished run = runPltrun(with({"--nproc-per-node", "2", "--stall-timeout", "0.5"},
                                python("import time, os\nassert os.environ['PLTRUN_HEARTBEAT']\ntime.sleep(2.5)")));
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK_FALSE(contains(run.err, "stall"));
}

TEST_CASE("stall: a worker that beats and then ends normally is not a stall", "[stall]") {
  Finished run = runPltrun(with({"--nproc-per-node", "2", "--stall-timeout", "0.5"},
                                python(kBeat + "beat(0)\n"
                                               "if rank == 0: sys.exit(0)\n"
                                               "for step in range(25): beat(step); time.sleep(0.1)\n")));
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK_FALSE(contains(run.err, "stall"));
}

TEST_CASE("stall: a silent rank is named, its stack shown, the job exits 124 with failure.json and events", "[stall]") {
  TempDir logs;
  Finished run = runPltrun(with({"--nproc-per-node", "3", "--stall-timeout", "1", "--term-timeout", "2", "--log-dir",
                                 logs.path(), "--rdzv-id", "hang"},
                                python(kBeat + "def wait_forever():\n    time.sleep(3600)\n"
                                               "for step in range(100):\n"
                                               "    beat(step)\n"
                                               "    if rank == 1 and step == 3: wait_forever()\n"
                                               "    time.sleep(0.05)\n")));
  INFO(run.err);
  CHECK(run.status == 124);
  CHECK(contains(run.err, "culprit: rank 1 is behind: progress counter 3"));
  CHECK(contains(run.err, "line 6 in wait_forever"));  // its Python stack: file, line, function
  const nlohmann::json report = nlohmann::json::parse(readFile(logs / "hang/failure.json"));
  CHECK(report["schema"] == 1);  // docs/EVENTS.md
  CHECK(report["root_cause"]["rank"] == 1);
  CHECK(report["root_cause"]["stall"]["culprits"] == nlohmann::json::array({1}));
  // Ranks 0 and 2 ended by the SIGTERM pltrun sent them: stopped, not failed (docs/EVENTS.md).
  CHECK(report["others"] == nlohmann::json::array());
  CHECK_FALSE(contains(run.err, "also: rank"));
  CHECK(contains(run.err, "the stall report above has the culprit's stack"));
  bool eventSeen = false;
  for (const nlohmann::json& event : readJsonLines(logs / "hang/events.jsonl")) {
    if (event["event"] != "stall_detected") continue;
    eventSeen = true;
    for (const auto& rank : event["ranks"]) {
      if (rank["rank"] != 1) continue;
      CHECK(rank["stalled"] == true);
      CHECK(rank["silent_seconds"].get<double>() <= 2.0);  // within the timeout + 1 s
      CHECK(rank["stack_kind"] == "python");
    }
  }
  CHECK(eventSeen);
}

TEST_CASE("stall: heartbeats from a worker's child process count for the worker", "[stall]") {
  // The worker itself never beats; its child does, then stops while the worker lives on.
  Finished run = runPltrun(with({"--nproc-per-node", "1", "--stall-timeout", "1", "--term-timeout", "1"},
                                python(kBeat + "import subprocess\n"
                                               "child = 'import os, socket, time\\n' + "
                                               "'for s in range(5):\\n' + "
                                               "'    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b\"1\", "
                                               "os.environ[\"PLTRUN_HEARTBEAT\"]); time.sleep(0.1)'\n"
                                               "subprocess.run([sys.executable, '-c', child], check=True)\n"
                                               "time.sleep(30)\n")));
  INFO(run.err);
  CHECK(run.status == 124);
  CHECK(contains(run.err, "rank 0 stalled"));
}

TEST_CASE("stall: a C++ worker beating through libpltrun is named when it stops", "[stall][client]") {
  Finished run = runPltrun(
      {"--nproc-per-node", "3", "--stall-timeout", "1", "--term-timeout", "1", heartbeatWorker(), "250", "2"});
  INFO(run.err);
  CHECK(run.status == 124);
  CHECK(contains(run.err, "culprit: rank 2 is behind: progress counter 5"));
  // Its native stack where eu-stack is installed (scripts/install-deps.sh), else the kernel's view.
  CHECK((contains(run.err, "nanosleep") || contains(run.err, "kernel wait")));
}

// Across nodes: rank 2, on node 1, stops at step 5 while every other rank reaches 6. Node 0
// times out first (5 s against node 1's 30 s), so its verdict can only come from the
// counters node 1 published: it names rank 2 and ends the round for both.
TEST_CASE("stall: an elastic node names a culprit on another node from its published counters", "[stall][elastic]") {
  TempDir dir;
  ElasticJob job(dir, "2", "cross-node-stall", {"--max-restarts", "0"},
                 python(kBeat + "for step in range(6 if rank == 2 else 7):\n"
                                "    beat(step)\n"
                                "    time.sleep(0.02)\n"
                                "time.sleep(3600)\n"));
  job.start({}, "127.0.0.1", {"--node-rank", "0", "--stall-timeout", "5"});
  job.start({}, "127.0.0.1", {"--node-rank", "1", "--stall-timeout", "30"});
  const std::vector<Finished> ends = job.waitAll(60s);
  INFO("node 0: " << ends[0].err << "\nnode 1: " << ends[1].err);
  CHECK(ends[0].status == 124);
  CHECK(ends[1].status == 124);
  CHECK(contains(ends[0].err, "culprit: rank 2 is behind: progress counter 5 where the others reached 6"));
  CHECK(contains(ends[0].err, "rank 2 (on "));
  CHECK(contains(ends[0].err, ", as its node published it): step 5"));
  CHECK_FALSE(contains(ends[1].err, "stall detected"));
}

TEST_CASE("stall: with --max-restarts a stalled group restarts and can succeed", "[stall]") {
  Finished run = runPltrun({"--nproc-per-node", "2", "--stall-timeout", "1", "--term-timeout", "1", "--max-restarts",
                            "1", heartbeatWorker(), "60", "1"});
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK(contains(run.err, "restarting the worker group (1 of 1 restarts) after rank 1 stalled"));
}

TEST_CASE("stall: hostile datagrams neither crash pltrun nor stall anyone", "[stall][hostile]") {
  // Huge, empty, binary and negative payloads, then a flood, from the worker itself; the
  // socket's directory is private (mode 0700) so no other user reaches it.
  const std::string source =
      kBeat +
      "path = os.environ['PLTRUN_HEARTBEAT']\n"
      "assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700\n"
      "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK)\n"
      "for payload in [b'x' * 65000, b'', b'\\xff\\xfe\\x00', b'-5', b'99999999999999999999999']:\n"
      "    s.sendto(payload, path)\n"
      "sent = 0\n"
      "deadline = time.time() + 1.5\n"
      "while time.time() < deadline:\n"
      "    try:\n"
      "        s.sendto(b'7', path); sent += 1\n"
      "    except BlockingIOError:\n"
      "        pass\n"
      "print('sent', sent)\n"
      "for step in range(10): beat(step); time.sleep(0.05)\n";
  Finished run = runPltrun(with({"--nproc-per-node", "2", "--stall-timeout", "1"}, python(source)));
  INFO(run.out << run.err);
  CHECK(run.status == 0);
  CHECK(contains(run.out, "sent "));
  CHECK_FALSE(contains(run.err, "stall"));
}

namespace {

const std::string kTimerScript = std::string(TESTS_SOURCE_DIR) + "/e2e/torch_file_timer.py";

// forked: the workers are forked from pltrun's zygote (--preload torch, issue 43).
void checkFileTimer(const TorchRuntime& torch, bool forked = false) {
  if (!torch.available()) return;
  TempDir dir;
  std::vector<std::string> env = torch.workerEnvironment(dir.path());
  env.push_back("TORCHELASTIC_ENABLE_FILE_TIMER=1");
  std::vector<std::string> args = {"--nproc-per-node", "2", "--term-timeout", "2", kTimerScript};
  if (forked) args.insert(args.begin(), {"--preload", "torch"});
  ChildProcess pltrun(pltrunCommand(args), env);
  Finished run = pltrun.wait(std::chrono::seconds(120));
  INFO(run.out << run.err);
  CHECK(run.status == 128 + 9);  // rank 1 asked for SIGKILL
  CHECK(contains(run.err, "rank 1: its FileTimer scope 'step2' expired"));
  CHECK(contains(run.err, "rank 1 (local rank 1)"));
  CHECK(contains(run.out, std::string("[rank 0] done 0 ") + (forked ? "forked" : "cold")));
}

}  // namespace

TEST_CASE("stall: torch's FileTimer watchdog kills the worker whose timer expired, torch 1.13", "[stall][torch]") {
  checkFileTimer(torch113());
}

TEST_CASE("stall: torch's FileTimer watchdog kills the worker whose timer expired, torch 2.6",
          "[stall][torch][torch2]") {
  checkFileTimer(torch26());
}

TEST_CASE("stall: torch's FileTimer watchdog kills the worker whose timer expired, torch 2.14",
          "[stall][torch][torch2]") {
  checkFileTimer(torch214());
}

TEST_CASE("stall: torch's FileTimer watchdog kills a forked worker whose timer expired (--preload torch)",
          "[stall][torch][torch2][preload]") {
  checkFileTimer(GENERATE(torch113(), torch26(), torch214()), true);
}

TEST_CASE("stall: a bad --stall-timeout is one line, exit 2", "[stall][bad_input]") {
  Finished run = runPltrun({"--stall-timeout", "soon", "/bin/true"});
  CHECK(run.status == 2);
  CHECK(contains(run.err, "--stall-timeout: 'soon' is not valid"));
}

TEST_CASE(
    "stall: a --stall-timeout below 0.1 s is refused in one line naming the shortest, exit 2, even one that "
    "rounds to 0",
    "[stall][bad_input]") {
  for (const std::string value : {"0.05", "0.0004"}) {
    Finished run = runPltrun({"--stall-timeout", value, "/bin/true"});
    INFO(value << ": " << run.err);
    CHECK(run.status == 2);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
    CHECK(contains(run.err, "--stall-timeout: '" + value + "' is not valid: below the shortest stall timeout, 0.1 s"));
  }
}

namespace {

// A stand-in for eu-stack that never answers, first in pltrun's PATH; it notes each start.
std::string slowStackSampler(const TempDir& dir) {
  const std::string bin = dir / "bin";
  fs::create_directories(bin);
  std::ofstream(bin + "/eu-stack") << "#!/bin/sh\necho \"$@\" >> '" << (dir / "calls") << "'\nexec sleep 30\n";
  fs::permissions(bin + "/eu-stack", fs::perms::owner_all);
  return "PATH=" + bin + ":" + std::getenv("PATH");
}

}  // namespace

// A worker in uninterruptible sleep (`D`: a dead NFS mount, a driver call) neither runs a
// dump handler nor lets eu-stack in. That cannot be made portably here, so an eu-stack that
// never answers stands in for it: what it costs the report is the same. Six native workers
// stop beating at step 5 while two go on; each sampler is given its deadline at once, and
// the event loop goes on reading the two that beat.
TEST_CASE("stall: six stalled workers whose stack sampler never answers are all named within the timeout + 1 s",
          "[stall]") {
  TempDir dir;
  const std::string path = slowStackSampler(dir);
  Finished run = runPltrun({"--nproc-per-node", "8", "--stall-timeout", "1", "--term-timeout", "1", "--log-dir",
                            dir.path(), "--rdzv-id", "slow", heartbeatWorker(), "1500", "0,1,2,3,4,5"},
                           {path});
  INFO(run.err);
  CHECK(run.status == 124);
  CHECK(contains(run.err, "culprit: ranks 0, 1, 2, 3, 4, 5 are behind: progress counter 5"));
  CHECK(contains(run.err, "no stack: eu-stack did not answer within 0.5 s"));
  const std::string calls = readFile(dir / "calls");
  CHECK(std::count(calls.begin(), calls.end(), '\n') == 8);  // every running worker, the stand-in each time
  const nlohmann::json stall = nlohmann::json::parse(readFile(dir / "slow/failure.json"))["root_cause"]["stall"];
  CHECK(stall["culprits"] == nlohmann::json::array({0, 1, 2, 3, 4, 5}));
  REQUIRE(stall["ranks"].size() == 8);
  for (const nlohmann::json& rank : stall["ranks"]) {
    INFO(rank.dump());
    const bool stalled = rank["rank"].get<int>() < 6;
    CHECK(rank["stalled"] == stalled);
    CHECK(rank["no_stack"] == "eu-stack did not answer within 0.5 s");
    // The report's own figure: each rank's silence when the report was made. The stalled
    // ones': the timeout, the check and the stacks' deadline, within the timeout + 1 s (one
    // sampler after another, eight in turn, went far past it). The others' still counts their heartbeats.
    CHECK(rank["silent_seconds"].get<double>() <= (stalled ? 2.0 : 0.5));
  }
}

TEST_CASE("stall: a stopped worker's report says that no stack was read, not that it shows one", "[stall]") {
  Finished run = runPltrun(with({"--nproc-per-node", "1", "--stall-timeout", "1", "--term-timeout", "2"},
                                python(kBeat + "import signal\n"
                                               "for step in range(4): beat(step); time.sleep(0.05)\n"
                                               "os.kill(os.getpid(), signal.SIGSTOP)\n"
                                               "time.sleep(3600)\n")));
  INFO(run.err);
  CHECK(run.status == 124);
  CHECK(contains(run.err, "stopped (SIGSTOP or SIGTSTP)"));
  CHECK(contains(run.err, "no stack could be read for the stall report above"));
  CHECK_FALSE(contains(run.err, "has the culprit's stack"));
}
