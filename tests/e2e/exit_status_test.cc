// pltrun's exit status and failure report: the root-cause worker's own status, never a
// blanket 1 and never 0 after a failure; restarts bounded by --max-restarts.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("all workers succeeding gives status 0", "[exit]") {
  Finished run = runPltrun({"--nproc-per-node", "4", testWorker(), "exit", "0"});
  CHECK(run.status == 0);
  CHECK(!contains(run.err, "failure"));
}

TEST_CASE("a failing rank's own exit code becomes pltrun's", "[exit]") {
  Finished run = runPltrun({"--nproc-per-node", "4", testWorker(), "exit", "3", "2"});
  INFO(run.err);
  CHECK(run.status == 3);
  CHECK(contains(run.err, "rank 2 (local rank 2)"));
  CHECK(contains(run.err, "exit code 3"));
}

TEST_CASE("a worker killed by a signal gives 128 + the signal", "[exit]") {
  Finished run = runPltrun({"--nproc-per-node", "3", testWorker(), "kill-self", "9", "1"});
  INFO(run.err);
  CHECK(run.status == 128 + 9);
  CHECK(contains(run.err, "signal SIGKILL (9)"));
  CHECK(contains(run.err, "rank 1"));

  Finished segv = runPltrun({"--nproc-per-node", "2", testWorker(), "kill-self", "11", "0"});
  CHECK(segv.status == 128 + 11);
  CHECK(contains(segv.err, "SIGSEGV"));
}

TEST_CASE("the report shows a torch @record error file with its traceback", "[exit][report]") {
  TempDir logs;
  Finished run = runPltrun(
      {"--nproc-per-node", "2", "--log-dir", logs.path(), "--rdzv-id", "rec", testWorker(), "record-error", "boom"});
  INFO(run.err);
  CHECK(run.status == 1);
  CHECK(contains(run.err, "error: ValueError: boom"));
  CHECK(contains(run.err, "File \"train.py\", line 3"));
  auto report = nlohmann::json::parse(readFile(logs / "rec/failure.json"));
  CHECK(report["root_cause"]["message"] == "ValueError: boom");
  CHECK(report["root_cause"]["exit_code"] == 1);
  CHECK(report["root_cause"]["signal"].is_null());
  CHECK(report["root_cause"]["host"].get<std::string>().size() > 0);
  CHECK(contains(report["root_cause"]["error_file"].get<std::string>(), "rec/attempt_0/"));
}

TEST_CASE("without an error file the report shows the last 20 lines of stderr", "[exit][report]") {
  Finished run = runPltrun({"--nproc-per-node", "1", testWorker(), "stderr-lines", "50", "5"});
  INFO(run.err);
  CHECK(run.status == 5);
  size_t reportStart = run.err.find("worker failure");
  REQUIRE(reportStart != std::string::npos);
  std::string report = run.err.substr(reportStart);
  CHECK(contains(report, "    stderr line 50\n"));
  CHECK(contains(report, "    stderr line 31\n"));
  CHECK(!contains(report, "    stderr line 30\n"));
}

TEST_CASE("a failing rank restarts the whole group with the restart count incremented", "[exit][restart]") {
  TempDir dir, logs;
  Finished run = runPltrun({"--nproc-per-node", "3", "--max-restarts", "2", "--log-dir", logs.path(), "--rdzv-id", "r",
                            testWorker(), "fail-first-attempt", dir.path(), "1"});
  INFO(run.err);
  CHECK(run.status == 0);
  std::string attempts = readFile(dir / "attempts");
  INFO(attempts);
  CHECK(contains(attempts, "1 0\n"));  // rank 1 failed in the first attempt
  for (const char* line : {"0 1\n", "1 1\n", "2 1\n"}) CHECK(contains(attempts, line));
  CHECK(!contains(attempts, " 2\n"));  // no third attempt was needed
  CHECK(contains(run.err, "restarting the worker group (1 of 2 restarts)"));
  CHECK(std::filesystem::exists(logs / "r/attempt_1/2/stdout.log"));
}

TEST_CASE("restarts stop at --max-restarts and the last failure's status is returned", "[exit][restart]") {
  TempDir dir;
  Finished run = runPltrun(
      {"--nproc-per-node", "2", "--max-restarts", "2", "/bin/sh", "-c",
       "echo $TORCHELASTIC_RESTART_COUNT >> " + dir.path() + "/count_$RANK; [ $RANK = 0 ] && exit 5; exec sleep 30"});
  CHECK(run.status == 5);
  CHECK(readFile(dir / "count_0") == "0\n1\n2\n");
}

TEST_CASE("invalid UTF-8 and escape codes on a failing worker's stderr: its status, a report, failure.json",
          "[exit][report][bounded]") {
  TempDir dir;
  Finished run = runPltrun({"--nproc-per-node", "1", "--log-dir", dir.path(), "--no-python", "/bin/bash", "-c",
                            "printf 'bad \\377\\376 \\033[31mred\\007\\n' >&2; exit 4"});
  INFO(run.err);
  CHECK(run.status == 4);
  CHECK(contains(run.err, "    bad \\xff\\xfe \\x1b[31mred\\x07"));  // the report's copy, shown not obeyed
  bool found = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.path().filename() != "failure.json") continue;
    std::ifstream file(entry.path());
    const nlohmann::json report = nlohmann::json::parse(file);  // valid UTF-8: U+FFFD in place of the bytes
    CHECK(report["root_cause"]["exit_code"] == 4);
    found = true;
  }
  CHECK(found);
}

TEST_CASE("an error file nested 60000 levels deep: the report, not a crash", "[exit][report][bounded]") {
  Finished run = runPltrun(
      {"--nproc-per-node", "1", "--no-python", "/usr/bin/python3", "-c",
       "import os\n"
       "open(os.environ['TORCHELASTIC_ERROR_FILE'], 'w').write('{\"message\":' + '[' * 60000 + ']' * 60000 + '}')\n"
       "raise SystemExit(3)\n"});
  INFO(run.err);
  CHECK(run.status == 3);
  CHECK(contains(run.err, "error: (a JSON array nested deeper than 64 levels, not shown)"));
}

TEST_CASE("300 restarts in a 200-port range: each attempt's store gets a port no recent attempt used",
          "[exit][restart][bounded]") {
  // A network namespace of its own (loopback only) whose ephemeral range is 200 ports.
  // Before: every attempt's port was remembered forever, and the job died after 93 restarts.
  const std::string pltrunLine = [] {
    std::string line;
    for (const std::string& word : pltrunCommand({"--nproc-per-node", "2", "--max-restarts", "300", "--no-python",
                                                  "/bin/sh", "-c", "[ \"$TORCHELASTIC_RESTART_COUNT\" -ge 300 ]"})) {
      line += "'" + word + "' ";
    }
    return line;
  }();
  ChildProcess job({"/usr/bin/unshare", "-n", "/bin/sh", "-c",
                    "ip link set lo up && sysctl -qw net.ipv4.ip_local_port_range='40000 40199' && exec " + pltrunLine},
                   {});
  Finished run = job.wait(std::chrono::seconds(120));
  INFO(run.err.substr(run.err.size() > 3000 ? run.err.size() - 3000 : 0));
  CHECK(run.status == 0);
  CHECK(contains(run.err, "(300 of 300 restarts)"));
}
