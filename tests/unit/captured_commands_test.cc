// runCapturedCommands (the driver's health checks, one per host): real /bin/sh children,
// run side by side, their output and exit statuses kept, their standard input written, and
// one still running at the deadline killed with its whole process group.

#include "launcher/process/captured_commands.h"

#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

CapturedCommand shell(const std::string& script, const std::string& input = "") {
  return CapturedCommand{"/bin/sh", {"sh", "-c", script}, {"PATH=/usr/bin:/bin"}, input};
}

}  // namespace

TEST_CASE("captured commands: each one's output, stdin and exit status, every one to its end", "[captured]") {
  const std::string large(200 * 1024, 'x');  // more than a pipe holds: written as it is read
  const std::vector<CapturedRun> runs = runCapturedCommands(
      {shell("echo out; echo err >&2; exit 3"), shell("wc -c"), shell("kill -TERM $$"), shell("cat", large)}, 60s, -1);
  REQUIRE(runs.size() == 4);
  CHECK(runs[0].out == "out\n");
  CHECK(runs[0].err == "err\n");
  REQUIRE(runs[0].end);
  CHECK(runs[0].end->exitCode == 3);
  CHECK(runs[1].out == "0\n");  // no input: its standard input is closed at once
  REQUIRE(runs[2].end);
  CHECK(runs[2].end->signal == SIGTERM);
  CHECK(runs[3].out.size() == kCapturedOutputLimit);  // the end of it is kept
  CHECK(runs[3].end->succeeded());
  for (const CapturedRun& run : runs) CHECK_FALSE(run.timedOut);
}

TEST_CASE("captured commands: errorToOutput makes stdout and stderr one stream, in the order written", "[captured]") {
  CapturedCommand merged = shell("echo one; echo two >&2; echo three; echo four >&2; exit 1");
  merged.errorToOutput = true;
  const std::vector<CapturedRun> runs = runCapturedCommands({merged}, 60s, -1);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].out == "one\ntwo\nthree\nfour\n");
  CHECK(runs[0].err.empty());
  REQUIRE(runs[0].end);
  CHECK(runs[0].end->exitCode == 1);
}

TEST_CASE("captured commands: they run at once, not one after the other", "[captured]") {
  TempDir directory;
  // Each waits for the other's file: both finish only if both run at the same time.
  const std::string a = directory / "a", b = directory / "b";
  const std::vector<CapturedRun> runs =
      runCapturedCommands({shell("touch " + a + "; while [ ! -e " + b + " ]; do sleep 0.05; done; echo first"),
                           shell("touch " + b + "; while [ ! -e " + a + " ]; do sleep 0.05; done; echo second")},
                          60s, -1);
  CHECK(runs[0].out == "first\n");
  CHECK(runs[1].out == "second\n");
  CHECK_FALSE(runs[0].timedOut);
  CHECK_FALSE(runs[1].timedOut);
}

TEST_CASE(
    "captured commands: one still running at the deadline is killed with its group; one that cannot start says why",
    "[captured]") {
  TempDir directory;
  const std::string pidFile = directory / "sleeper";
  const std::vector<CapturedRun> runs =
      runCapturedCommands({shell("sleep 300 & echo $! > " + pidFile + "; echo started; wait"), shell("echo quick"),
                           CapturedCommand{"/nonexistent/program", {"program"}, {}, ""}},
                          1s, -1);
  CHECK(runs[0].timedOut);
  CHECK(runs[0].out == "started\n");  // what it wrote before is kept
  REQUIRE(runs[0].end);
  CHECK(runs[0].end->signal == SIGKILL);
  const pid_t sleeper = std::stoi(readFile(pidFile));
  CHECK(waitUntilGone({sleeper}, 10s).empty());  // its child, in its group, went too
  CHECK_FALSE(runs[1].timedOut);
  CHECK(runs[1].out == "quick\n");
  CHECK_FALSE(runs[2].end);
  CHECK_THAT(runs[2].startError, Catch::Contains("execve") && Catch::Contains("No such file"));
}
