// readErrorFile (torch's @record format), the human-readable failure report and its JSON.

#include "launcher/group/failure_report.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "helpers/temp_dir.h"

using Catch::Matchers::Contains;
using pltrun::failureReportJson;
using pltrun::formatFailureReport;
using pltrun::readErrorFile;
using pltrun::RecordedError;
using pltrun::WorkerFailure;

namespace {

// A file holding `content` in a temporary directory of its own, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& content) : path_(dir_.write("error.json", content)) {}
  const std::string& path() const { return path_; }

 private:
  pltrun::test::TempDir dir_{"pltrun-error"};
  std::string path_;
};

WorkerFailure failure(int rank, int localRank) {
  WorkerFailure failure;
  failure.rank = rank;
  failure.localRank = localRank;
  failure.attempt = 1;
  failure.host = "node-a";
  failure.pid = 4242;
  failure.end.exitCode = 3;
  failure.time = std::chrono::system_clock::from_time_t(1700000000);
  failure.errorFile = "/tmp/logs/attempt_1/" + std::to_string(localRank) + "/error.json";
  return failure;
}

}  // namespace

TEST_CASE("readErrorFile reads torch's @record format", "[failure_report]") {
  TempFile file(
      R"({"message": {"message": "ValueError: boom", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"train.py\", line 3\nValueError: boom", "timestamp": "1700000000"}}})");
  std::optional<RecordedError> recorded = readErrorFile(file.path());
  REQUIRE(recorded.has_value());
  CHECK(recorded->message == "ValueError: boom");
  CHECK(recorded->traceback == "Traceback (most recent call last):\n  File \"train.py\", line 3\nValueError: boom");
  CHECK(recorded->timestamp == "1700000000");
}

TEST_CASE("readErrorFile reads a plain message", "[failure_report]") {
  TempFile file(R"({"message": "plain"})");
  std::optional<RecordedError> recorded = readErrorFile(file.path());
  REQUIRE(recorded.has_value());
  CHECK(recorded->message == "plain");
  CHECK(recorded->traceback.empty());
  CHECK(recorded->timestamp.empty());
}

TEST_CASE("readErrorFile tolerates a numeric timestamp and a missing extraInfo", "[failure_report]") {
  SECTION("numeric timestamp") {
    TempFile file(R"({"message": {"message": "m", "extraInfo": {"py_callstack": "tb", "timestamp": 1700000001}}})");
    auto recorded = readErrorFile(file.path());
    REQUIRE(recorded.has_value());
    CHECK(recorded->timestamp == "1700000001");
    CHECK(recorded->traceback == "tb");
  }
  SECTION("no extraInfo") {
    TempFile file(R"({"message": {"message": "only"}})");
    auto recorded = readErrorFile(file.path());
    REQUIRE(recorded.has_value());
    CHECK(recorded->message == "only");
    CHECK(recorded->traceback.empty());
  }
}

TEST_CASE("readErrorFile gives nothing for missing or unreadable files", "[failure_report]") {
  CHECK_FALSE(readErrorFile("/nonexistent/pltrun/error.json").has_value());
  SECTION("garbage") {
    TempFile file("this is { not json");
    CHECK_FALSE(readErrorFile(file.path()).has_value());
  }
  SECTION("empty file") {
    TempFile file("");
    CHECK_FALSE(readErrorFile(file.path()).has_value());
  }
  SECTION("JSON without a message") {
    TempFile file(R"({"error": "x"})");
    CHECK_FALSE(readErrorFile(file.path()).has_value());
  }
  SECTION("JSON that is not an object") {
    TempFile file(R"(["message"])");
    CHECK_FALSE(readErrorFile(file.path()).has_value());
  }
}

TEST_CASE("the report names the failed worker and how it ended", "[failure_report]") {
  WorkerFailure root = failure(5, 1);
  SECTION("exit code") {
    std::string report = formatFailureReport(root, {});
    CHECK_THAT(report, Contains("rank 5"));
    CHECK_THAT(report, Contains("local rank 1"));
    CHECK_THAT(report, Contains("node-a"));
    CHECK_THAT(report, Contains("pid 4242"));
    CHECK_THAT(report, Contains("exit code 3"));
    CHECK_THAT(report, Contains("2023-11-14T22:13:20Z"));
  }
  SECTION("signal") {
    root.end.signal = SIGKILL;
    std::string report = formatFailureReport(root, {});
    CHECK_THAT(report, Contains("signal SIGKILL (9)"));
    CHECK_THAT(report, !Contains("exit code"));
  }
}

TEST_CASE("the report shows the recorded error and every traceback line", "[failure_report]") {
  WorkerFailure root = failure(0, 0);
  root.recorded =
      RecordedError{"ValueError: boom", "Traceback (most recent call last):\n  File \"t.py\", line 9\nValueError: boom",
                    "1700000000"};
  root.stderrTail = {"stderr line that is not shown"};
  std::string report = formatFailureReport(root, {});
  CHECK_THAT(report, Contains("ValueError: boom"));
  CHECK_THAT(report, Contains("    Traceback (most recent call last):\n"));
  CHECK_THAT(report, Contains("      File \"t.py\", line 9\n"));
  CHECK_THAT(report, Contains("    ValueError: boom\n"));
  CHECK_THAT(report, Contains(root.errorFile));
  CHECK_THAT(report, !Contains("stderr line that is not shown"));
}

TEST_CASE("without a recorded error the report shows the stderr tail", "[failure_report]") {
  WorkerFailure root = failure(2, 2);
  root.stderrTail = {"loading data", "RuntimeError: CUDA out of memory"};
  std::string report = formatFailureReport(root, {});
  CHECK_THAT(report, Contains("loading data\n"));
  CHECK_THAT(report, Contains("RuntimeError: CUDA out of memory\n"));
  SECTION("and says so when there is nothing at all") {
    root.stderrTail.clear();
    std::string empty = formatFailureReport(root, {});
    CHECK_THAT(empty, Contains("nothing to stderr"));
  }
}

TEST_CASE("the report lists the other failed workers", "[failure_report]") {
  WorkerFailure root = failure(0, 0);
  WorkerFailure other = failure(7, 3);
  other.end.signal = SIGTERM;
  std::string report = formatFailureReport(root, {other});
  CHECK_THAT(report, Contains("rank 7 ended with signal SIGTERM (15)"));
}

namespace {

// Rank 1 stalled and was named; its sample as `stack`.
WorkerFailure stalledRank(const pltrun::StackSample& stack) {
  WorkerFailure root = failure(1, 1);
  root.end = pltrun::ProcessEnd{0, SIGTERM};
  pltrun::StallReport stall;
  stall.host = "node-a";
  stall.timeoutText = "1.0 s";
  pltrun::RankEvidence rank;
  rank.rank = 1;
  rank.stalled = true;
  rank.silentSeconds = 1.2;
  rank.stack = stack;
  stall.ranks = {rank};
  stall.verdict = pltrun::judgeStall(stall.ranks);
  root.stall = stall;
  return root;
}

}  // namespace

TEST_CASE("a stall's report says the culprit's stack is above only when the stall report showed one",
          "[failure_report]") {
  const std::string shown = "the stall report above has the culprit's stack";
  SECTION("a Python dump: shown") {
    const std::string dump = "Current thread 0x00007f (most recent call first):\n  File \"t.py\", line 3 in f\n";
    const WorkerFailure root = stalledRank(pltrun::pythonStackSample(dump));
    REQUIRE(root.stall->text().find("line 3 in f") != std::string::npos);
    CHECK_THAT(formatFailureReport(root, {}), Contains(shown));
  }
  SECTION("a stopped process: nothing to show") {
    const WorkerFailure root = stalledRank(pltrun::stoppedStackSample('T'));
    const std::string report = formatFailureReport(root, {});
    CHECK_THAT(report, !Contains(shown));
    CHECK_THAT(report, Contains("no stack could be read for the stall report above"));
  }
  SECTION("nothing read") {
    const std::string report = formatFailureReport(stalledRank(pltrun::StackSample{}), {});
    CHECK_THAT(report, !Contains(shown));
    CHECK_THAT(report, Contains("no stack could be read for the stall report above"));
  }
}

TEST_CASE("endedByStopSignal: a worker that ended by a stop signal it was sent was stopped, not failed",
          "[failure_report]") {
  using pltrun::endedByStopSignal;
  using pltrun::ProcessEnd;
  const std::vector<int> sent = {SIGTERM, SIGKILL};
  CHECK(endedByStopSignal(ProcessEnd{0, SIGTERM}, sent));
  CHECK(endedByStopSignal(ProcessEnd{0, SIGKILL}, sent));
  CHECK(endedByStopSignal(ProcessEnd{128 + SIGTERM, 0}, sent));  // a shell's status for it
  CHECK_FALSE(endedByStopSignal(ProcessEnd{1, 0}, sent));        // an error of its own
  CHECK_FALSE(endedByStopSignal(ProcessEnd{0, SIGSEGV}, sent));
  CHECK_FALSE(endedByStopSignal(ProcessEnd{0, SIGTERM}, {}));  // nobody here sent it
  CHECK_FALSE(endedByStopSignal(ProcessEnd{0, 0}, sent));
}

TEST_CASE("failureReportJson", "[failure_report]") {
  WorkerFailure root = failure(5, 1);
  root.end.signal = SIGKILL;
  root.stderrTail = {"last words"};
  root.errorFile.clear();  // the worker wrote none
  WorkerFailure other = failure(6, 2);
  other.recorded = RecordedError{"boom", "tb", "1700000000"};

  nlohmann::json document = failureReportJson(root, {other});
  const nlohmann::json& cause = document.at("root_cause");
  CHECK(cause.at("rank") == 5);
  CHECK(cause.at("local_rank") == 1);
  CHECK(cause.at("attempt") == 1);
  CHECK(cause.at("host") == "node-a");
  CHECK(cause.at("pid") == 4242);
  CHECK(cause.at("exit_code").is_null());
  CHECK(cause.at("signal") == "SIGKILL");
  CHECK(cause.at("time") == "2023-11-14T22:13:20Z");
  CHECK(cause.at("error_file").is_null());  // the worker wrote none (exit_status_test: one that did)
  CHECK(cause.at("stderr_tail") == nlohmann::json::array({"last words"}));
  CHECK_FALSE(cause.contains("message"));

  REQUIRE(document.at("others").is_array());
  REQUIRE(document.at("others").size() == 1);
  const nlohmann::json& second = document.at("others").at(0);
  CHECK(second.at("rank") == 6);
  CHECK(second.at("exit_code") == 3);
  CHECK(second.at("signal").is_null());
  CHECK(second.at("message") == "boom");
  CHECK(second.at("traceback") == "tb");
  CHECK(second.at("error_timestamp") == "1700000000");
  CHECK_FALSE(second.contains("stderr_tail"));

  SECTION("no others: an empty array") {
    nlohmann::json alone = failureReportJson(failure(0, 0), {});
    CHECK(alone.at("others").is_array());
    CHECK(alone.at("others").empty());
    CHECK(alone.at("root_cause").at("exit_code") == 3);
  }
}

TEST_CASE("readErrorFile: a message nested 60000 levels deep is named, not dumped (no stack overflow)",
          "[failure_report][bounded]") {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  for (const std::string& content :
       {R"({"message":)" + deep + "}",
        R"({"message":{"message":)" + deep + R"(,"extraInfo":{"py_callstack":)" + deep + "}}}"}) {
    TempFile file(content);
    std::optional<RecordedError> recorded = readErrorFile(file.path());
    REQUIRE(recorded.has_value());
    CHECK(recorded->message == "(a JSON array nested deeper than 64 levels, not shown)");
  }
  // A shallow structure is still shown as JSON.
  TempFile shallow(R"({"message": {"message": [1, {"a": "b"}]}})");
  CHECK(readErrorFile(shallow.path())->message == R"([1,{"a":"b"}])");
}
