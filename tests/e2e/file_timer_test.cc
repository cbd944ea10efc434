// torch's FileTimer watchdog against a hostile or broken worker (issue 42), with the real
// pltrun and a worker that writes the protocol by hand (file_timer_client.py):
//   - 30 000 timers of one worker: pltrun keeps its share, refuses the rest in one warning
//     line, and its memory stays small;
//   - a timer for a process that is not the job's is ignored at once (never stored);
//   - a descendant that left its worker's session is still the job's: its timer is served;
//   - a scope id with ESC, BEL and a line break is printed escaped, on one line.

#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

const std::string kClient = std::string(TESTS_SOURCE_DIR) + "/e2e/file_timer_client.py";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

size_t countOf(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

std::vector<std::string> timerJob(const std::vector<std::string>& clientArgs) {
  std::vector<std::string> args = {"/usr/bin/python3", kClient};
  args.insert(args.end(), clientArgs.begin(), clientArgs.end());
  return pltrunCommand(args);
}

const std::vector<std::string> kFileTimer = {"TORCHELASTIC_ENABLE_FILE_TIMER=1"};

// The peak resident memory of `pid` (VmHWM), in KiB; 0 when unreadable.
long peakMemoryKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

}  // namespace

TEST_CASE("FileTimer: a worker registering 30000 timers is refused past its share, in one line, and pltrun stays small",
          "[file_timer]") {
  TempDir dir;
  ChildProcess pltrun(timerJob({"flood", "30000", dir.path()}), kFileTimer);
  REQUIRE(waitForFile(dir / "sent", 120s));
  // The FIFO holds 64 KiB at most: all but the last few requests are read by now.
  const long peak = peakMemoryKiB(pltrun.pid());
  std::ofstream(dir / "go").close();
  Finished run = pltrun.wait(60s);
  INFO(run.err.substr(0, 4000));
  CHECK(run.status == 0);
  INFO("pltrun's peak resident memory: " << peak << " KiB");
  CHECK(peak > 0);
  CHECK(peak < 40 * 1024);  // 30000 scope ids of 3000 bytes are 90 MB
  CHECK(countOf(run.err, "FileTimer: refused the timer") == 1);
  CHECK(contains(run.err, "a worker holds at most 256 timers at once"));
  CHECK(countOf(run.err, "\n") < 10);
}

TEST_CASE("FileTimer: a timer for a process that is not the job's is ignored, and that process left alone",
          "[file_timer]") {
  ChildProcess bystander({"/bin/sleep", "60"});
  Finished run = runPltrun({"/usr/bin/python3", kClient, "foreign", std::to_string(bystander.pid())}, kFileTimer);
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK(contains(run.err, "FileTimer: ignored the timer 'foreign' of pid " + std::to_string(bystander.pid()) +
                              ": not a process of this job's workers"));
  CHECK_FALSE(contains(run.err, "expired"));  // it was never stored, so it never expired
  CHECK_FALSE(processGone(bystander.pid()));
}

TEST_CASE("FileTimer: a descendant that left its worker's session is the job's, and its timer is served",
          "[file_timer]") {
  Finished run = runPltrun({"/usr/bin/python3", kClient, "descendant"}, kFileTimer);
  INFO(run.out << run.err);
  CHECK(run.status == 0);
  CHECK(contains(run.err, "rank 0: its FileTimer scope 'descendant' expired"));
  CHECK(contains(run.out, "child ended by signal 9"));
}

TEST_CASE("FileTimer: a scope id with ESC, BEL and a line break is printed escaped, on one line", "[file_timer]") {
  Finished run = runPltrun({"--term-timeout", "2", "/usr/bin/python3", kClient, "escape"}, kFileTimer);
  INFO(run.err);
  CHECK(run.status == 128 + SIGKILL);
  CHECK(contains(run.err, "rank 0: its FileTimer scope 'evil\\x1b[31m\\x0aFORGED line\\x07' expired"));
  CHECK_FALSE(contains(run.err, "\x1b"));
  CHECK_FALSE(contains(run.err, "\x07"));
  CHECK_FALSE(contains(run.err, "\nFORGED"));
}
