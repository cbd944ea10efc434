// Signals and process lifetime: forwarded signals reach every worker, a stop signal is
// followed by SIGKILL after the grace period (or at once when repeated), and no worker or
// grandchild survives pltrun, not even `kill -9 pltrun`, nor one that left the worker's
// session (pltrun is its subreaper and sweeps its children when the job is over).

#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "helpers/child_process.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

void waitForAll(const TempDir& dir, const std::string& stem, int workers) {
  for (int rank = 0; rank < workers; ++rank) {
    REQUIRE(waitForFile(dir / (stem + std::to_string(rank)), 20s));
  }
}

// The worker and grandchild pids each `family` worker wrote.
std::vector<pid_t> familyPids(const TempDir& dir, int workers) {
  std::vector<pid_t> pids;
  for (int rank = 0; rank < workers; ++rank) {
    std::string path = dir / ("family_" + std::to_string(rank));
    REQUIRE(waitForFile(path, 20s));
    std::string text;
    // The file is written in one go, but may be seen before its content lands.
    for (int tries = 0; tries < 100 && text.find(' ') == std::string::npos; ++tries) {
      text = readFile(path);
      if (text.find(' ') == std::string::npos) std::this_thread::sleep_for(10ms);
    }
    std::istringstream numbers(text);
    pid_t worker = 0, grandchild = 0;
    numbers >> worker >> grandchild;
    REQUIRE(worker > 0);
    REQUIRE(grandchild > 0);
    pids.push_back(worker);
    pids.push_back(grandchild);
  }
  return pids;
}

}  // namespace

TEST_CASE("SIGTERM is forwarded to every worker and pltrun exits 128+15", "[signals]") {
  TempDir dir;
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "4", testWorker(), "signals", dir.path()}));
  waitForAll(dir, "ready_", 4);
  pltrun.signal(SIGTERM);
  Finished run = pltrun.wait(30s);
  INFO(run.err);
  CHECK(run.status == 128 + SIGTERM);
  CHECK(!run.timedOut);
  for (int rank = 0; rank < 4; ++rank) CHECK(readFile(dir / ("term_" + std::to_string(rank))) == "1");
}

TEST_CASE("SIGUSR1 and SIGUSR2 are forwarded without stopping the job", "[signals]") {
  TempDir dir;
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "3", testWorker(), "signals", dir.path()}));
  waitForAll(dir, "ready_", 3);
  pltrun.signal(SIGUSR1);
  waitForAll(dir, "usr1_", 3);
  pltrun.signal(SIGUSR2);  // the worker's default action for SIGUSR2 is to die: the job fails
  Finished run = pltrun.wait(30s);
  INFO(run.err);
  CHECK(run.status == 128 + SIGUSR2);
  CHECK(run.err.find("SIGUSR2") != std::string::npos);
}

TEST_CASE("a worker that ignores SIGTERM is killed after --term-timeout", "[signals]") {
  TempDir dir;
  ChildProcess pltrun(
      pltrunCommand({"--nproc-per-node", "2", "--term-timeout", "0.5", testWorker(), "ignore-term", dir.path()}));
  waitForAll(dir, "ready_", 2);
  auto start = std::chrono::steady_clock::now();
  pltrun.signal(SIGTERM);
  Finished run = pltrun.wait(30s);
  auto elapsed = std::chrono::steady_clock::now() - start;
  INFO(run.err);
  CHECK(run.status == 128 + SIGTERM);
  CHECK(elapsed >= 400ms);
  CHECK(elapsed < 10s);
  CHECK(run.err.find("sending SIGKILL") != std::string::npos);
}

TEST_CASE("a second stop signal kills at once, without waiting for the grace period", "[signals]") {
  TempDir dir;
  ChildProcess pltrun(
      pltrunCommand({"--nproc-per-node", "2", "--term-timeout", "60", testWorker(), "ignore-term", dir.path()}));
  waitForAll(dir, "ready_", 2);
  auto start = std::chrono::steady_clock::now();
  pltrun.signal(SIGTERM);
  std::this_thread::sleep_for(200ms);
  pltrun.signal(SIGINT);
  Finished run = pltrun.wait(30s);
  INFO(run.err);
  CHECK(!run.timedOut);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(run.status == 128 + SIGTERM);
  CHECK(run.err.find("killing the workers now") != std::string::npos);
}

TEST_CASE("after SIGTERM no worker or grandchild remains", "[signals][lifetime]") {
  TempDir dir;
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "3", testWorker(), "family", dir.path()}));
  std::vector<pid_t> pids = familyPids(dir, 3);
  pltrun.signal(SIGTERM);
  Finished run = pltrun.wait(30s);
  CHECK(run.status == 128 + SIGTERM);
  CHECK(waitUntilGone(pids, 5s).empty());
}

TEST_CASE("after kill -9 of pltrun no worker or grandchild remains", "[signals][lifetime]") {
  TempDir dir;
  // A killed pltrun cannot remove its temporary run directory: keep it inside ours.
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "3", testWorker(), "family", dir.path()}),
                      {"TMPDIR=" + dir.path()});
  std::vector<pid_t> pids = familyPids(dir, 3);
  pltrun.signal(SIGKILL);
  Finished run = pltrun.wait(30s);
  CHECK(run.status == 128 + SIGKILL);
  std::vector<pid_t> survivors = waitUntilGone(pids, 5s);
  // Name each survivor (worker or grandchild, and its state), so a failure says which.
  std::string described;
  for (pid_t pid : survivors) {
    described += " " + std::to_string(pid) + ": " + readFile("/proc/" + std::to_string(pid) + "/stat");
  }
  INFO("survivors: " << survivors.size() << " of " << pids.size() << " (worker, grandchild pairs)" << described);
  CHECK(survivors.empty());
  for (pid_t pid : survivors) kill(pid, SIGKILL);  // never leave them behind, even on failure
}

TEST_CASE("a background process left by a finished worker does not outlive the job", "[signals][lifetime]") {
  TempDir dir;
  Finished run = runPltrun(
      {"--nproc-per-node", "2", "/bin/sh", "-c", "sleep 1000 & echo $! > " + dir.path() + "/bg_$RANK; exit 0"});
  CHECK(run.status == 0);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) pids.push_back(std::stoi(readFile(dir / ("bg_" + std::to_string(rank)))));
  CHECK(waitUntilGone(pids, 5s).empty());
}

TEST_CASE("a descendant that left the worker's session does not outlive the job", "[signals][lifetime]") {
  TempDir dir;
  // setsid: a new session and process group (Popen(start_new_session=True)), out of reach
  // of the worker's group kill; the worker itself exits at once.
  SECTION("the job ends normally") {
    Finished run = runPltrun({"--nproc-per-node", "2", "/bin/sh", "-c",
                              "setsid sleep 78 & echo $! > " + dir.path() + "/escaped_$RANK; exit 0"});
    INFO(run.err);
    CHECK(run.status == 0);
    CHECK(run.err.find("left behind outside their process groups") != std::string::npos);
  }
  SECTION("the job is stopped by SIGTERM, the escaped process's parent still running") {
    ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "2", "/bin/sh", "-c",
                                       "setsid sleep 78 & echo $! > " + dir.path() + "/escaped_$RANK; sleep 1000"}));
    for (int rank = 0; rank < 2; ++rank) REQUIRE(waitForFile(dir / ("escaped_" + std::to_string(rank)), 20s));
    pltrun.signal(SIGTERM);
    CHECK(pltrun.wait(30s).status == 128 + SIGTERM);
  }
  std::vector<pid_t> escaped;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string text = readFile(dir / ("escaped_" + std::to_string(rank)));
    REQUIRE(!text.empty());
    escaped.push_back(std::stoi(text));
  }
  const std::vector<pid_t> survivors = waitUntilGone(escaped, 5s);
  CHECK(survivors.empty());
  for (pid_t pid : survivors) kill(pid, SIGKILL);  // never leave them behind, even on failure
}

TEST_CASE("a stop signal while stopping after a failure ends the job without a restart", "[signals][restart]") {
  TempDir dir;
  // Rank 0 ignores SIGTERM, so the group waits out the grace period; rank 1 fails as soon
  // as rank 0 is ready (not before: a SIGTERM ahead of rank 0's trap would end it at once).
  const std::string script = "touch " + dir.path() + "/attempt_${TORCHELASTIC_RESTART_COUNT}_$RANK; " +
                             "if [ $RANK = 1 ]; then while [ ! -e " + dir.path() +
                             "/ready_0 ]; do sleep 0.01; done; exit 3; fi; trap '' TERM; touch " + dir.path() +
                             "/ready_$RANK; while :; do sleep 0.05; done";
  ChildProcess pltrun(
      pltrunCommand({"--nproc-per-node", "2", "--max-restarts", "3", "--term-timeout", "1", "/bin/sh", "-c", script}));
  REQUIRE(waitForFile(dir / "ready_0", 20s));
  REQUIRE(waitForFile(dir / "attempt_0_1", 20s));
  std::this_thread::sleep_for(300ms);  // rank 1 has failed and the group is stopping
  pltrun.signal(SIGTERM);              // one signal: forwarded; the grace period still runs, then SIGKILL
  Finished run = pltrun.wait(30s);
  INFO(run.err);
  CHECK(!run.timedOut);
  CHECK(run.status == 128 + SIGTERM);
  CHECK(run.err.find("exit code 3") != std::string::npos);
  CHECK(run.err.find("restarting") == std::string::npos);
  CHECK(!std::filesystem::exists(dir / "attempt_1_0"));
}
