// Issue 43, item 2: when the zygote cannot serve (a preload module that does not exist, a
// zygote killed while the job runs), pltrun says so in one line and the job goes on with
// cold-started workers (or a restarted zygote); --preload without a Python program is a
// command-line mistake.

#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "e2e/worker_endings.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

TEST_CASE("preload: a module that does not exist is one line, and the workers start cold", "[preload][fallback]") {
  TempDir dir;
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "2", "--preload", "json,no_such_module_for_pltrun",
                                     endingsScript(), dir.path(), "exit", "all", "0"}));
  const Finished run = pltrun.wait(60s);
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK(linesContaining(run.err, "no_such_module_for_pltrun") == 1);
  CHECK(linesContaining(run.err, "Traceback") == 0);
  CHECK(workerStart(dir, 0).how == "cold");
  CHECK(workerStart(dir, 1).how == "cold");
}

TEST_CASE("preload: a zygote killed while the job runs is one line, and the next attempt still starts",
          "[preload][fallback]") {
  TempDir dir;
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "2", "--preload", "json", "--max-restarts", "1",
                                     endingsScript(), dir.path(), "fail-when-told", "1"}));
  const WorkerStart second = workerStart(dir, 1, 0, 20s);
  REQUIRE(second.how == "json");
  const std::vector<pid_t> zygotes = zygotesOf(pltrun.pid(), {workerStart(dir, 0, 0, 20s).pid, second.pid});
  INFO("pltrun's stderr so far: " << pltrun.stderrSoFar());
  REQUIRE(zygotes.size() == 1);
  REQUIRE(kill(zygotes[0], SIGKILL) == 0);
  REQUIRE(waitUntilGone(zygotes, 5s).empty());
  std::ofstream(dir / "go") << "";  // attempt 0's rank 1 now fails
  const Finished run = pltrun.wait(60s);
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK_THAT(run.err, Catch::Contains("restarting the worker group (1 of 1 restarts) after rank 1"));
  CHECK(workerStart(dir, 0, 1).pid > 0);
  CHECK(workerStart(dir, 1, 1).pid > 0);
  CHECK(linesContaining(run.err, "zygote") == 1);
  CHECK(linesContaining(run.err, "Traceback") == 0);
}

TEST_CASE("preload: --preload without a Python program is one line, exit 2", "[preload][bad_input]") {
  const Finished run = runPltrun({"--preload", "json", "/bin/true"});
  INFO(run.err);
  CHECK(run.status == 2);
  CHECK(linesContaining(run.err, "--preload") == 1);
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}
