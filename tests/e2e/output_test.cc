// Worker output through the launcher: prefixed, whole lines, nothing lost (also when a
// worker crashes), complete per-attempt per-rank log files, and the -r/-t/filter options.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/json_lines.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Checks that `lines` (with `prefixed` console prefixes or raw) hold, for each rank in
// `ranks`, the flood lines 0..n in order with nothing missing or mangled. Returns the
// number of lines seen per rank.
std::map<int, long long> checkFloodLines(std::istream& lines, bool prefixed) {
  std::map<int, long long> next;
  std::string line;
  const std::string payload(60, 'x');
  while (std::getline(lines, line)) {
    std::string body = line;
    int rank = -1;
    if (prefixed) {
      REQUIRE(line.rfind("[rank ", 0) == 0);
      size_t close = line.find("] ");
      REQUIRE(close != std::string::npos);
      rank = std::stoi(line.substr(6, close - 6));
      body = line.substr(close + 2);
    }
    // body: "rank R line N xxxx..."
    size_t lineWord = body.find(" line ");
    REQUIRE(body.rfind("rank ", 0) == 0);
    REQUIRE(lineWord != std::string::npos);
    int bodyRank = std::stoi(body.substr(5, lineWord - 5));
    if (prefixed) REQUIRE(bodyRank == rank);
    size_t space = body.find(' ', lineWord + 6);
    REQUIRE(space != std::string::npos);
    long long number = std::stoll(body.substr(lineWord + 6, space - lineWord - 6));
    REQUIRE(number == next[bodyRank]);
    REQUIRE(body.substr(space + 1) == payload);
    ++next[bodyRank];
  }
  return next;
}

}  // namespace

TEST_CASE("200 MB from 4 workers arrive complete and unmangled, on the console and in the logs", "[output]") {
  TempDir dir, logs;
  const long long bytesPerWorker = 50LL * 1000 * 1000;
  ChildProcess pltrun(pltrunCommand({"--nproc-per-node", "4", "--log-dir", logs.path(), "--rdzv-id", "flood",
                                     testWorker(), "flood", std::to_string(bytesPerWorker)}),
                      {}, dir / "console.txt");
  Finished run = pltrun.wait(std::chrono::seconds(120));
  INFO(run.err);
  REQUIRE(run.status == 0);

  std::ifstream console(dir / "console.txt");
  std::map<int, long long> consoleLines = checkFloodLines(console, true);
  REQUIRE(consoleLines.size() == 4);
  for (int rank = 0; rank < 4; ++rank) {
    std::ifstream log(logs / ("flood/attempt_0/" + std::to_string(rank) + "/stdout.log"));
    std::map<int, long long> logLines = checkFloodLines(log, false);
    CHECK(logLines.size() == 1);
    CHECK(logLines[rank] == consoleLines[rank]);
    CHECK(std::filesystem::file_size(logs / ("flood/attempt_0/" + std::to_string(rank) + "/stdout.log")) >=
          static_cast<uintmax_t>(bytesPerWorker));
  }
}

TEST_CASE("output written just before a worker crashes is not lost", "[output]") {
  Finished run =
      runPltrun({"--nproc-per-node", "1", "/bin/sh", "-c", "printf 'first\\nsecond\\nunfinished'; kill -9 $$"});
  CHECK(run.status == 137);
  CHECK(contains(run.out, "[rank 0] first\n[rank 0] second\n[rank 0] unfinished\n"));
}

TEST_CASE("stdout and stderr keep their console streams and prefixes", "[output]") {
  Finished run = runPltrun({"--nproc-per-node", "2", "/bin/sh", "-c", "echo out $RANK; echo err $RANK >&2"});
  REQUIRE(run.status == 0);
  CHECK(contains(run.out, "[rank 0] out 0\n"));
  CHECK(contains(run.out, "[rank 1] out 1\n"));
  CHECK(contains(run.err, "[rank 1] err 1\n"));
  CHECK(!contains(run.out, "err"));
}

TEST_CASE("flag --no-prefix passes lines through as written", "[output]") {
  Finished run = runPltrun({"--no-prefix", "--nproc-per-node", "2", "/bin/sh", "-c", "echo plain $RANK"});
  REQUIRE(run.status == 0);
  CHECK(contains(run.out, "plain 0\n"));
  CHECK(contains(run.out, "plain 1\n"));
  CHECK(!contains(run.out, "[rank"));
}

TEST_CASE("carriage-return progress bars become whole lines in a pipe", "[output]") {
  Finished run = runPltrun({"--nproc-per-node", "1", testWorker(), "progress", "20"});
  REQUIRE(run.status == 0);
  CHECK(contains(run.out, "[rank 0] step 20/20\n"));
  CHECK(contains(run.out, "[rank 0] step 3/20\n"));  // each redraw a line of its own: nothing redraws a pipe
  CHECK(!contains(run.out, "\r"));
}

TEST_CASE("in a pipe, an unfinished progress bar is never glued to another rank's line", "[output]") {
  // tqdm's way: "\r" then the bar, the line ended only at the very end. On a terminal the
  // bar is previewed at once (the next draw overwrites it); in a pipe or file it waits.
  Finished run = runPltrun({"--nproc-per-node", "2", "--no-python", "/bin/sh", "-c",
                            "if [ $RANK = 0 ]; then printf '\\rprogress 1/2'; sleep 1; printf '\\rprogress 2/2\\n'; "
                            "else sleep 0.4; echo other; fi"});
  INFO(run.out);
  REQUIRE(run.status == 0);
  CHECK(!contains(run.out, "\r[rank 1]"));
  CHECK((run.out.rfind("[rank 1] other\n", 0) == 0 || contains(run.out, "\n[rank 1] other\n")));
  CHECK(contains(run.out, "progress 2/2\n"));
}

TEST_CASE("flag --local-ranks-filter limits the console, not the logs", "[output]") {
  TempDir logs;
  Finished run = runPltrun({"--nproc-per-node", "3", "--local-ranks-filter", "0,2", "--log-dir", logs.path(),
                            "--rdzv-id", "f", "/bin/sh", "-c", "echo hello $RANK"});
  REQUIRE(run.status == 0);
  CHECK(contains(run.out, "[rank 0] hello 0"));
  CHECK(contains(run.out, "[rank 2] hello 2"));
  CHECK(!contains(run.out, "hello 1"));
  CHECK(readFile(logs / "f/attempt_0/1/stdout.log") == "hello 1\n");
}

TEST_CASE("flag -r redirects streams to the log files only, -t keeps them on the console too", "[output]") {
  TempDir logs;
  Finished redirected = runPltrun({"-r", "1", "--nproc-per-node", "2", "--log-dir", logs.path(), "--rdzv-id", "r",
                                   "/bin/sh", "-c", "echo out $RANK; echo err $RANK >&2"});
  REQUIRE(redirected.status == 0);
  CHECK(!contains(redirected.out, "out 0"));
  CHECK(contains(redirected.err, "[rank 0] err 0"));
  CHECK(readFile(logs / "r/attempt_0/0/stdout.log") == "out 0\n");
  CHECK(readFile(logs / "r/attempt_0/1/stderr.log") == "err 1\n");

  Finished perRank = runPltrun({"--redirects", "0:3", "--nproc-per-node", "2", "--log-dir", logs.path(), "--rdzv-id",
                                "p", "/bin/sh", "-c", "echo out $RANK; echo err $RANK >&2"});
  REQUIRE(perRank.status == 0);
  CHECK(!contains(perRank.out, "out 0"));
  CHECK(!contains(perRank.err, "err 0"));
  CHECK(contains(perRank.out, "[rank 1] out 1"));

  Finished teed = runPltrun(
      {"-t", "3", "--nproc-per-node", "1", "--log-dir", logs.path(), "--rdzv-id", "t", "/bin/sh", "-c", "echo both"});
  REQUIRE(teed.status == 0);
  CHECK(contains(teed.out, "[rank 0] both"));
  CHECK(readFile(logs / "t/attempt_0/0/stdout.log") == "both\n");

  // Both for the same streams, as torchrun users write them: --tee still shows the output.
  Finished redirectedAndTeed = runPltrun({"--redirects", "3", "--tee", "3", "--nproc-per-node", "1", "--log-dir",
                                          logs.path(), "--rdzv-id", "rt", "/bin/sh", "-c", "echo shown"});
  REQUIRE(redirectedAndTeed.status == 0);
  CHECK(contains(redirectedAndTeed.out, "[rank 0] shown"));
  CHECK(readFile(logs / "rt/attempt_0/0/stdout.log") == "shown\n");
}

TEST_CASE("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE is the console prefix, as torchrun reads it", "[output]") {
  Finished run = runPltrun({"--nproc-per-node", "2", "--role", "trainer", "/bin/sh", "-c", "echo hi"},
                           {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE=[${role_name}${local_rank}/${rank}]:"});
  INFO(run.out);
  REQUIRE(run.status == 0);
  CHECK(contains(run.out, "[trainer0/0]:hi\n"));
  CHECK(contains(run.out, "[trainer1/1]:hi\n"));
  CHECK(!contains(run.out, "[rank 0]"));
}

TEST_CASE("a second run with the same id gets a directory of its own, the first run's logs stay byte for byte",
          "[output][logs]") {
  TempDir logs;
  Finished first = runPltrun(
      {"--nproc-per-node", "2", "--log-dir", logs.path(), "--rdzv-id", "demo", "/bin/sh", "-c", "echo first $RANK"});
  REQUIRE(first.status == 0);
  Finished second = runPltrun(
      {"--nproc-per-node", "1", "--log-dir", logs.path(), "--rdzv-id", "demo", "/bin/sh", "-c", "echo second"});
  INFO(second.err);
  REQUIRE(second.status == 0);
  CHECK(readFile(logs / "demo/attempt_0/0/stdout.log") == "first 0\n");
  CHECK(readFile(logs / "demo/attempt_0/1/stdout.log") == "first 1\n");
  CHECK(readFile(logs / "demo.1/attempt_0/0/stdout.log") == "second\n");
  CHECK(contains(second.err, "worker logs go to " + (logs / "demo.1")));
  CHECK(!std::filesystem::exists(logs / "demo.1/attempt_0/1"));  // the second run's own tree only
  // Something else at the name (a file, a link) is never used either.
  std::filesystem::create_symlink("/tmp", logs / "demo.2");
  Finished third = runPltrun({"--log-dir", logs.path(), "--rdzv-id", "demo", "/bin/sh", "-c", "echo third"});
  REQUIRE(third.status == 0);
  CHECK(readFile(logs / "demo.3/attempt_0/0/stdout.log") == "third\n");
  // latest: the newest run's directory, relative so the tree can move.
  CHECK(std::filesystem::read_symlink(logs / "latest") == "demo.3");
  CHECK(readFile(logs / "latest/attempt_0/0/stdout.log") == "third\n");
}

TEST_CASE("a file of the user's named latest in --log-dir is never replaced by the link", "[output][logs]") {
  TempDir logs;
  std::ofstream(logs / "latest") << "my notes\n";
  Finished run = runPltrun({"--log-dir", logs.path(), "--rdzv-id", "mine", "/bin/true"});
  REQUIRE(run.status == 0);
  CHECK(readFile(logs / "latest") == "my notes\n");
  CHECK(std::filesystem::is_directory(logs / "mine"));
}

TEST_CASE("a single-node run's events.jsonl says where its files are, every worker's start and end, schema 1",
          "[output][logs][events]") {
  TempDir logs;
  Finished run = runPltrun({"--nproc-per-node", "2", "--max-restarts", "1", "--log-dir", logs.path(), "--rdzv-id", "ev",
                            "/bin/sh", "-c", "[ \"$RANK$TORCHELASTIC_RESTART_COUNT\" != 10 ]"});
  INFO(run.err);
  REQUIRE(run.status == 0);  // rank 1 failed in attempt 0; attempt 1 succeeded
  const std::vector<nlohmann::json> events = readJsonLines(logs / "ev/events.jsonl");
  REQUIRE(events.size() >= 2);
  for (const nlohmann::json& event : events) CHECK(event["schema"] == 1);
  CHECK(events.front()["event"] == "run_started");
  CHECK(events.front()["directory"] == logs / "ev");
  CHECK(events.front()["run_id"] == "ev");
  CHECK(events.front()["workers"] == 2);
  CHECK(events.back()["event"] == "job_finished");
  CHECK(events.back()["status"] == 0);
  std::map<std::string, int> counted;
  for (const nlohmann::json& event : events) counted[event["event"].get<std::string>()] += 1;
  CHECK(counted["worker_started"] == 4);  // 2 workers, 2 attempts
  CHECK(counted["restart"] == 1);
  bool failureSeen = false;
  for (const nlohmann::json& event : events) {
    if (event["event"] != "worker_exited" || event["status"] == 0) continue;
    failureSeen = true;
    CHECK(event["rank"] == 1);
    CHECK(event["attempt"] == 0);
    CHECK(event["exit_code"] == 1);
  }
  CHECK(failureSeen);
}
