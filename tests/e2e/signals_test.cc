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
#include "helpers/temp_dir.h"

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
  INFO(run.err);
  CHECK(run.status == 0);
  // Still in their workers' process groups: said so, not "outside" them.
  CHECK(run.err.find("killed 2 process(es) the workers left behind in their process groups") != std::string::npos);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < 2; ++rank) pids.push_back(std::stoi(readFile(dir / ("bg_" + std::to_string(rank)))));
  CHECK(waitUntilGone(pids, 5s).empty());
}

TEST_CASE("a descendant that left the worker's session does not outlive the job", "[signals][lifetime]") {
  TempDir dir;
  // setsid: a new session and process group (Popen(start_new_session=True)), out of reach
  // of the worker's group kill; the worker itself exits at once.
  SECTION("the job ends normally") {
    // The worker exits only once the child has left its group (setsid done: its process
    // group is its own pid, field 5 of /proc/PID/stat), so that the sweep finds it outside.
    Finished run = runPltrun(
        {"--nproc-per-node", "2", "/bin/sh", "-c",
         "setsid sleep 78 & pid=$!; until [ \"$(cut -d' ' -f5 /proc/$pid/stat)\" = \"$pid\" ]; do sleep 0.01; done; "
         "echo $pid > " +
             dir.path() + "/tmp_$RANK; mv " + dir.path() + "/tmp_$RANK " + dir.path() + "/escaped_$RANK; exit 0"});
    INFO(run.err);
    CHECK(run.status == 0);
    CHECK(run.err.find("killed 2 process(es) the workers left behind outside their process groups") !=
          std::string::npos);
  }
  SECTION("the job is stopped by SIGTERM, the escaped process's parent still running") {
    // The pid goes in under another name first: once escaped_N exists it holds the pid, and
    // the SIGTERM below cannot cut the shell between creating the file and writing it (it
    // did, under load).
    ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "2", "/bin/sh", "-c",
                                       "setsid sleep 78 & echo $! > " + dir.path() + "/tmp_$RANK; mv " + dir.path() +
                                           "/tmp_$RANK " + dir.path() + "/escaped_$RANK; sleep 1000"}));
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

TEST_CASE("after kill -9 of pltrun a descendant that left the worker's session dies too (the job's cgroup)",
          "[signals][lifetime][cgroup]") {
  TempDir dir;
  // Each worker reports its cgroup, then leaves a process in a session of its own: out of
  // reach of the guard's group kill, and pltrun, its subreaper, is killed.
  ChildProcess pltrun(
      pltrunCommand({"--nproc-per-node", "2", "/bin/sh", "-c",
                     "grep ^0:: /proc/self/cgroup > " + dir.path() + "/cgroup_$RANK; setsid sleep 78 & echo $! > " +
                         dir.path() + "/escaped_$RANK; sleep 1000"}),
      {"TMPDIR=" + dir.path()});
  std::vector<pid_t> escaped;
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE(waitForFile(dir / ("escaped_" + std::to_string(rank)), 20s));
    std::string text;
    for (int tries = 0; text.empty() && tries < 200; ++tries, std::this_thread::sleep_for(10ms)) {
      text = readFile(dir / ("escaped_" + std::to_string(rank)));
    }
    REQUIRE(!text.empty());
    escaped.push_back(std::stoi(text));
  }
  // This machine gives pltrun a cgroup v2 to divide (root, or a delegated one): the test
  // is about that case, so it insists on it rather than passing without it.
  const std::string cgroup = readFile(dir / "cgroup_0");
  INFO("worker's cgroup: " << cgroup);
  REQUIRE(cgroup.find("/pltrun-" + std::to_string(pltrun.pid()) + "-") != std::string::npos);
  const auto killed = std::chrono::steady_clock::now();
  pltrun.signal(SIGKILL);
  CHECK(pltrun.wait(30s).status == 128 + SIGKILL);
  const std::vector<pid_t> survivors = waitUntilGone(escaped, 5s);
  CHECK(survivors.empty());
  for (pid_t pid : survivors) kill(pid, SIGKILL);  // never leave them behind, even on failure
  const std::chrono::duration<double, std::milli> gone = std::chrono::steady_clock::now() - killed;
  WARN("escaped descendants gone " << gone.count() << " ms after kill -9 of pltrun");
  // The guard removed the cgroup once it was empty.
  std::string mount = "/sys/fs/cgroup";
  if (std::filesystem::exists("/sys/fs/cgroup/unified/cgroup.procs")) mount = "/sys/fs/cgroup/unified";
  const std::string cgroupDirectory = mount + cgroup.substr(cgroup.find("::") + 2, cgroup.size() - 4);
  bool removed = false;
  for (int tries = 0; !removed && tries < 300; ++tries, std::this_thread::sleep_for(10ms)) {
    removed = !std::filesystem::exists(cgroupDirectory);
  }
  CHECK(removed);
}

TEST_CASE("after kill -9 of pltrun the job cgroup of a pltrun run as its worker is removed with its own",
          "[signals][lifetime][cgroup]") {
  TempDir dir;
  // The worker is a pltrun (a local agent, say) whose job cgroup is inside the outer one's.
  // The outer guard's cgroup.kill also kills the inner pltrun and its guard, so the inner
  // cgroup is left for the outer guard to remove before its own.
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "1", pltrunCommand({})[0], "--nproc-per-node", "1", "/bin/sh",
                                     "-c", "grep ^0:: /proc/self/cgroup > " + dir.path() + "/cgroup; sleep 1000"}),
                      {"TMPDIR=" + dir.path()});
  REQUIRE(waitForFile(dir / "cgroup", 20s));
  std::string cgroup;
  for (int tries = 0; cgroup.empty() && tries < 200; ++tries, std::this_thread::sleep_for(10ms)) {
    cgroup = readFile(dir / "cgroup");
  }
  INFO("inner worker's cgroup: " << cgroup);
  const std::string outer = "/pltrun-" + std::to_string(pltrun.pid()) + "-";
  const size_t outerAt = cgroup.find(outer);
  REQUIRE(outerAt != std::string::npos);
  REQUIRE(cgroup.find("/pltrun-", outerAt + outer.size()) != std::string::npos);  // nested
  pltrun.signal(SIGKILL);
  CHECK(pltrun.wait(30s).status == 128 + SIGKILL);
  std::string mount = "/sys/fs/cgroup";
  if (std::filesystem::exists("/sys/fs/cgroup/unified/cgroup.procs")) mount = "/sys/fs/cgroup/unified";
  const std::string outerDirectory = mount + cgroup.substr(3, cgroup.find('/', outerAt + 1) - 3);
  bool removed = false;
  for (int tries = 0; !removed && tries < 300; ++tries, std::this_thread::sleep_for(10ms)) {
    removed = !std::filesystem::exists(outerDirectory);
  }
  INFO("outer job cgroup: " << outerDirectory);
  CHECK(removed);
}

TEST_CASE("with PLTRUN_CGROUP=off the workers stay in pltrun's cgroup and escaped descendants are still swept",
          "[signals][lifetime][cgroup]") {
  TempDir dir;
  Finished run = runPltrun({"--nproc-per-node", "1", "/bin/sh", "-c",
                            "grep ^0:: /proc/self/cgroup; setsid sleep 78 & echo $! > " + dir.path() + "/escaped"},
                           {"PLTRUN_CGROUP=off"});
  CHECK(run.status == 0);
  CHECK(run.out.find("0::") != std::string::npos);
  CHECK(run.out.find("/pltrun-") == std::string::npos);
  const std::vector<pid_t> survivors = waitUntilGone({std::stoi(readFile(dir / "escaped"))}, 5s);
  CHECK(survivors.empty());
  for (pid_t pid : survivors) kill(pid, SIGKILL);
}

TEST_CASE("the final group kill never reaches a stranger that was given an ended worker's pid",
          "[signals][lifetime][pid-reuse]") {
  TempDir dir;
  // In a pid namespace of its own, the script (its pid 1) runs pltrun with 2 workers: rank
  // 0 exits at once, rank 1 waits. Once rank 0 has ended, the script sets ns_last_pid so
  // that the next process it forks gets rank 0's pid if that pid is free, and starts a
  // stranger there in a session, and so a process group, of its own: the number pltrun
  // will kill(-pgid) when the job ends. pltrun keeps an ended leader unreaped until its
  // group is killed, so the pid is never free while it matters and the stranger lives
  // (before, the leader was reaped at once: the stranger got its pid and was killed).
  const std::string d = dir.path();
  const std::string script =
      "mkfifo " + d + "/go; " + pltrunCommand({})[0] +
      " -q --nproc-per-node 2 /bin/sh -c 'if [ $RANK = 0 ]; then echo $$ > " + d + "/leader; exit 0; fi; read line < " +
      d + "/go' & job=$!; " + "while [ ! -s " + d + "/leader ]; do sleep 0.01; done; leader=$(cat " + d +
      "/leader); "
      "while [ -e /proc/$leader ] && ! grep -q ') Z' /proc/$leader/stat; do sleep 0.01; done; "
      "sleep 0.2; echo $((leader - 1)) > /proc/sys/kernel/ns_last_pid; "
      "setsid sleep 60 & stranger=$!; echo \"leader $leader stranger $stranger\"; "
      "echo go > " +
      d +
      "/go; wait $job; echo \"pltrun $?\"; "
      "if grep -q ') [^Z]' /proc/$stranger/stat 2>/dev/null; then echo stranger alive; kill $stranger; fi";
  ChildProcess namespaced({"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", script});
  Finished run = namespaced.wait(60s);
  INFO(run.out << run.err);
  REQUIRE(run.status == 0);
  CHECK(run.out.find("pltrun 0") != std::string::npos);
  CHECK(run.out.find("stranger alive") != std::string::npos);
}

namespace {

// How many of `pid`'s children have ended and wait to be reaped (zombies).
int zombieChildren(pid_t pid) {
  int zombies = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", error)) {
    std::ifstream list(task.path() / "children");
    for (pid_t child = 0; list >> child;) {
      const std::string stat = readFile("/proc/" + std::to_string(child) + "/stat");
      const size_t close = stat.rfind(')');
      if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') ++zombies;
    }
  }
  return zombies;
}

}  // namespace

TEST_CASE("background processes of restarted workers are reaped as they end, not at exit", "[signals][lifetime]") {
  TempDir dir;
  // Each attempt leaves 40 short-lived orphans to pltrun (the subreaper) and fails; the last
  // one says so in a file and stays a while.
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "1", "--max-restarts", "4", "--no-python", "/bin/bash", "-c",
                                     "for i in $(seq 40); do (sleep 0.05 &); done; sleep 0.3\n"
                                     "if [ \"$TORCHELASTIC_RESTART_COUNT\" -lt 4 ]; then exit 1; fi\n"
                                     "touch " +
                                         dir.path() + "/last; sleep 6"}));
  REQUIRE(waitForFile(dir / "last", 30s));
  std::this_thread::sleep_for(2500ms);  // the last orphans ended 2 s ago; the reaper runs every second
  const int zombies = zombieChildren(pltrun.pid());
  CHECK(pltrun.wait(30s).status == 0);
  CHECK(zombies < 10);  // 200 before: every attempt's orphans, reaped only at exit
}
