// Issue 43, item 2: pltrun supervises a worker forked from its zygote (--preload) exactly as a
// cold-started one: it waits for it, reports its exit code or signal with its own pid, counts
// its restarts, forwards signals to it, finds it stalled and shows its Python stack, lets it
// run its atexit handlers and threads to the end, and leaves no process behind, the zygote
// included. Each test runs cold and forked (GENERATE) with the same expectations.

#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e/worker_endings.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

struct Ending {
  std::vector<std::string> action;
  int status;
  std::string report;  // what the failure report says of rank 1
};

std::string describe(bool forked) { return forked ? "forked (--preload json)" : "cold"; }

// The workers (ranks `first`..1) started the way the run asked for; pltrun has ended.
void checkStartedAs(const TempDir& dir, bool forked, int attempt = 0, int first = 0) {
  for (int rank = first; rank < 2; ++rank) {
    CHECK(workerStart(dir, rank, attempt).how == (forked ? "json" : "cold"));
  }
}

}  // namespace

TEST_CASE("preload: a forked worker's exit code or signal is reported with its own pid, as a cold one's",
          "[preload][supervision]") {
  const bool forked = GENERATE(false, true);
  const Ending ending = GENERATE(Ending{{"exit", "1", "3"}, 3, "ended with exit code 3"},
                                 Ending{{"signal", "1", "SIGKILL"}, 128 + SIGKILL, "ended with signal SIGKILL (9)"},
                                 Ending{{"signal", "1", "SIGSEGV"}, 128 + SIGSEGV, "ended with signal SIGSEGV (11)"},
                                 Ending{{"interrupt", "1"}, 128 + SIGINT, "ended with signal SIGINT (2)"},
                                 Ending{{"raise", "1"}, 1, "ValueError: worker_endings raised on rank 1"});
  TempDir dir;
  ChildProcess pltrun(endingsJob(forked, {}, dir, ending.action));
  const Finished run = pltrun.wait(60s);
  INFO(describe(forked) << ", " << ending.action[0] << "\n" << run.err);
  checkStartedAs(dir, forked, 0, 1);  // rank 0 may be stopped before it wrote anything
  const WorkerStart failed = workerStart(dir, 1);
  CHECK(run.status == ending.status);
  CHECK_THAT(run.err, Catch::Contains("pltrun: worker failure (root cause: the first worker to fail)\n"
                                      "  rank 1 (local rank 1) on "));
  CHECK_THAT(run.err, Catch::Contains(", pid " + std::to_string(failed.pid) + ", attempt 0\n"));
  CHECK_THAT(run.err, Catch::Contains(ending.report));
  REQUIRE(failed.pid > 0);
  CHECK(waitUntilGone({failed.pid}, 5s).empty());
}

TEST_CASE("preload: a forked worker runs its atexit handlers and waits for its threads before it ends",
          "[preload][supervision]") {
  const bool forked = GENERATE(false, true);
  TempDir dir;
  ChildProcess pltrun(endingsJob(forked, {}, dir, {"teardown"}));
  const Finished run = pltrun.wait(60s);
  INFO(describe(forked) << "\n" << run.err);
  CHECK(run.status == 0);
  checkStartedAs(dir, forked);
  for (const std::string file : {"atexit.0", "atexit.1", "thread.0", "thread.1"}) {
    CHECK(std::filesystem::exists(dir / file));
  }
}

TEST_CASE("preload: --max-restarts counts forked attempts, each a new process, as cold ones",
          "[preload][supervision]") {
  const bool forked = GENERATE(false, true);
  TempDir enough, tooFew;
  ChildProcess succeeds(endingsJob(forked, {"--max-restarts", "2"}, enough, {"fail-until", "1", "2"}));
  const Finished success = succeeds.wait(60s);
  INFO(describe(forked) << "\n" << success.err);
  CHECK(success.status == 0);
  CHECK_THAT(success.err, Catch::Contains("restarting the worker group (2 of 2 restarts) after rank 1"));
  // Rank 1, which fails, wrote its pid in every attempt (rank 0 may be stopped before).
  std::vector<pid_t> pids;
  for (int attempt = 0; attempt < 3; ++attempt) {
    checkStartedAs(enough, forked, attempt, 1);
    pids.push_back(workerStart(enough, 1, attempt).pid);
    CHECK(pids.back() > 0);
  }
  std::sort(pids.begin(), pids.end());
  CHECK(std::unique(pids.begin(), pids.end()) == pids.end());

  ChildProcess fails(endingsJob(forked, {"--max-restarts", "2"}, tooFew, {"fail-until", "1", "3"}));
  const Finished failure = fails.wait(60s);
  INFO(failure.err);
  CHECK(failure.status == 1);
  CHECK_THAT(failure.err, Catch::Contains(", pid " + std::to_string(workerStart(tooFew, 1, 2).pid) + ", attempt 2\n"));
}

TEST_CASE("preload: SIGTERM to pltrun reaches every forked worker and leaves no process, zygote included",
          "[preload][supervision][signals]") {
  const bool forked = GENERATE(false, true);
  TempDir dir;
  ChildProcess pltrun(endingsJob(forked, {}, dir, {"wait"}));
  for (int rank = 0; rank < 2; ++rank) REQUIRE(waitForFile(dir / ("ready." + std::to_string(rank)), 30s));
  // The workers and, forked, the zygote: every one must be gone when pltrun is.
  const std::vector<pid_t> children = childrenOf(pltrun.pid());
  CHECK(zygotesOf(pltrun.pid(), {workerStart(dir, 0).pid, workerStart(dir, 1).pid}).size() == (forked ? 1u : 0u));
  pltrun.signal(SIGTERM);
  const Finished run = pltrun.wait(30s);
  INFO(describe(forked) << "\n" << run.err);
  CHECK(run.status == 128 + SIGTERM);
  checkStartedAs(dir, forked);
  CHECK(std::filesystem::exists(dir / "term.0"));
  CHECK(std::filesystem::exists(dir / "term.1"));
  CHECK(waitUntilGone(children, 5s).empty());
}

TEST_CASE("preload: after kill -9 of pltrun no forked worker and no zygote remains",
          "[preload][supervision][lifetime]") {
  const bool forked = GENERATE(false, true);
  TempDir dir;
  ChildProcess pltrun(endingsJob(forked, {}, dir, {"wait"}));
  for (int rank = 0; rank < 2; ++rank) REQUIRE(waitForFile(dir / ("ready." + std::to_string(rank)), 30s));
  const std::vector<pid_t> children = childrenOf(pltrun.pid());
  CHECK(zygotesOf(pltrun.pid(), {workerStart(dir, 0).pid, workerStart(dir, 1).pid}).size() == (forked ? 1u : 0u));
  pltrun.signal(SIGKILL);
  pltrun.wait(30s);
  INFO(describe(forked) << ": pltrun's children were " << nlohmann::json(children).dump());
  CHECK(waitUntilGone(children, 10s).empty());
}

TEST_CASE("preload: a stalled forked worker is named and its Python stack shown", "[preload][supervision][stall]") {
  const bool forked = GENERATE(false, true);
  TempDir dir;
  ChildProcess pltrun(endingsJob(forked, {"--stall-timeout", "1", "--term-timeout", "1"}, dir, {"stall", "1"}));
  const Finished run = pltrun.wait(60s);
  INFO(describe(forked) << "\n" << run.err);
  CHECK(run.status == 124);
  checkStartedAs(dir, forked);
  CHECK_THAT(run.err, Catch::Contains("culprit: rank 1"));
  CHECK_THAT(run.err, Catch::Contains("in stall_here"));  // its stack, dumped by pltrun's hook in the worker
}
