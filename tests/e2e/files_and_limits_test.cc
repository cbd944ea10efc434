// What a user, another user or a worker controls about pltrun's files and limits (issue 14):
//   - a run id that could leave --log-dir (../x, /x, ., ..) is refused with status 2;
//   - the run's directory is private (0700, its files 0600) and always one the run created:
//     whatever is found at its name (an earlier run, a planted link) is left alone and the
//     run takes RUN_ID.N; a link planted where pltrun writes (failure.json) is never followed;
//   - a worker's error file that is a FIFO, or over 1 MiB, neither hangs nor floods pltrun;
//   - workers get the open-file limit pltrun was started with, not the one it raised;
//   - too low an open-file limit for the workers asked for is one line saying what to do,
//     and no worker started before it is left running;
//   - a full disk under --log-dir stops the log files with a warning, while the job and
//     its console output go on to the end.

#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

unsigned permissions(const std::string& path) {
  struct stat status {};
  REQUIRE(lstat(path.c_str(), &status) == 0);
  return status.st_mode & 0777;
}

// pltrun running `script` under /bin/sh as its one worker, with `flags` before it.
Finished runScript(std::vector<std::string> flags, const std::string& script) {
  flags.insert(flags.end(), {"/bin/sh", "-c", script});
  return runPltrun(flags);
}

}  // namespace

TEST_CASE("a run id that could leave --log-dir is refused with status 2", "[files]") {
  TempDir dir;
  const std::string logDir = dir / "logs";
  for (const std::string& runId :
       std::vector<std::string>{"../escaped", "/tmp/abs", ".", "..", "a/b", "semi;colon", std::string(129, 'x')}) {
    Finished run = runPltrun({"--log-dir", logDir, "--rdzv-id", runId, testWorker(), "exit", "0"});
    INFO(runId << ": " << run.err);
    CHECK(run.status == 2);
    CHECK(contains(run.err, "--rdzv-id"));
    CHECK(contains(run.err, "A-Z a-z 0-9 . _ -"));
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  }
  CHECK_FALSE(fs::exists(dir / "escaped"));
  Finished fine = runPltrun({"--log-dir", logDir, "--rdzv-id", "job-7.a_b", testWorker(), "exit", "0"});
  INFO(fine.err);
  CHECK(fine.status == 0);
}

TEST_CASE("the run directory is private, and links planted in it are refused, never followed", "[files]") {
  TempDir dir;
  const std::string logDir = dir / "logs";
  SECTION("a fresh run: 0700 directories, 0600 files") {
    Finished run = runPltrun({"--log-dir", logDir, "--rdzv-id", "mine", "-r", "3", testWorker(), "exit", "0"});
    INFO(run.err);
    REQUIRE(run.status == 0);
    CHECK(permissions(logDir + "/mine") == 0700);
    for (const auto& entry : fs::recursive_directory_iterator(logDir + "/mine")) {
      INFO(entry.path());
      CHECK(permissions(entry.path().string()) == (entry.is_directory() ? 0700u : 0600u));
    }
  }
  SECTION("a directory made 0777 beforehand at the run's name is left alone; the run's own is private") {
    fs::create_directories(logDir + "/open");
    chmod((logDir + "/open").c_str(), 0777);
    Finished run = runPltrun({"--log-dir", logDir, "--rdzv-id", "open", testWorker(), "exit", "0"});
    INFO(run.err);
    REQUIRE(run.status == 0);
    CHECK(fs::is_empty(logDir + "/open"));
    CHECK(permissions(logDir + "/open.1") == 0700);
  }
  SECTION("a link to someone else's directory at the run's name is never followed") {
    fs::create_directories(logDir);
    fs::create_directories(dir / "victim");
    fs::create_directory_symlink(dir / "victim", logDir + "/planted");
    Finished run = runPltrun({"--log-dir", logDir, "--rdzv-id", "planted", "-r", "3", testWorker(), "exit", "0"});
    INFO(run.err);
    CHECK(run.status == 0);
    CHECK(fs::is_empty(dir / "victim"));
    CHECK(fs::is_directory(fs::symlink_status(logDir + "/planted.1")));
  }
  SECTION("failure.json is a link to a file pltrun must not overwrite") {
    fs::create_directories(logDir + "/report");
    std::ofstream(dir / "precious") << "keep me";
    fs::create_symlink(dir / "precious", logDir + "/report/failure.json");
    Finished run = runPltrun({"--log-dir", logDir, "--rdzv-id", "report", testWorker(), "exit", "3"});
    INFO(run.err);
    CHECK(run.status == 3);                          // the worker's status still
    CHECK(contains(run.err, "worker failure"));      // and its report on the console
    CHECK(readFile(dir / "precious") == "keep me");  // the link's target untouched
  }
}

TEST_CASE("a worker's error file that is a FIFO or huge neither hangs nor floods pltrun", "[files]") {
  SECTION("a FIFO") {
    const auto started = std::chrono::steady_clock::now();
    Finished run = runScript({}, "mkfifo \"$TORCHELASTIC_ERROR_FILE\" && exit 1");
    INFO(run.err);
    CHECK(run.status == 1);
    CHECK_FALSE(run.timedOut);
    CHECK(std::chrono::steady_clock::now() - started < 20s);
  }
  SECTION("over 1 MiB") {
    Finished run = runScript({},
                             "{ printf '{\"message\": \"'; head -c 2000000 /dev/zero | tr '\\0' x; printf '\"}'; } "
                             "> \"$TORCHELASTIC_ERROR_FILE\"; exit 1");
    INFO(run.err.substr(0, 2000));
    CHECK(run.status == 1);
    CHECK(run.err.size() < 100000);  // the 2 MB message was not read into the report
  }
  SECTION("a small one is still reported") {
    Finished run = runScript({}, "printf '{\"message\": \"disk on fire\"}' > \"$TORCHELASTIC_ERROR_FILE\"; exit 1");
    INFO(run.err);
    CHECK(run.status == 1);
    CHECK(contains(run.err, "disk on fire"));
  }
}

TEST_CASE("workers get the open-file limit pltrun was started with", "[files]") {
  TempDir dir;
  const std::string seen = dir / "limit";
  // The shell lowers its soft limit, then becomes pltrun, whose store raises its own.
  ChildProcess pltrun({"/bin/sh", "-c", "ulimit -S -n 1000 && exec \"$0\" \"$@\"", pltrunCommand({})[0], "/bin/sh",
                       "-c", "ulimit -S -n > " + seen});
  Finished run = pltrun.wait(60s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK(readFile(seen) == "1000\n");
}

TEST_CASE("too low an open-file limit for the workers is one line, and no worker is left", "[files]") {
  TempDir dir;
  // Each worker appends its pid, then sleeps: any that survives pltrun is found.
  const std::string worker = "echo $$ >> " + dir.path() + "/started; exec sleep 30";
  ChildProcess pltrun({"/bin/sh", "-c", "ulimit -n 40 && exec \"$0\" \"$@\"", pltrunCommand({})[0], "-q",
                       "--nproc-per-node", "30", "/bin/sh", "-c", worker});
  Finished run = pltrun.wait(60s);
  INFO(run.err);
  CHECK(run.status == 1);
  CHECK(contains(run.err, "open-file limit"));
  CHECK(contains(run.err, "ulimit -n"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  std::vector<pid_t> started;
  std::istringstream pids(readFile(dir / "started"));
  for (pid_t pid = 0; pids >> pid;) started.push_back(pid);
  const std::vector<pid_t> survivors = waitUntilGone(started, 5s);
  CHECK(survivors.empty());
  for (pid_t pid : survivors) kill(pid, SIGKILL);
}

TEST_CASE("a full disk under --log-dir stops the log files, and the job and its console go on", "[files]") {
  TempDir dir;
  const std::string mountPoint = dir / "small";
  fs::create_directories(mountPoint);
  ChildProcess mount({"/bin/mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mountPoint});
  if (mount.wait(20s).status != 0) {
    WARN("skipped: cannot mount a tmpfs here (needs root)");
    return;
  }
  Finished run = runPltrun(
      {"--log-dir", mountPoint, "--rdzv-id", "full", "--nproc-per-node", "2", testWorker(), "flood", "1000000"});
  ChildProcess({"/bin/umount", mountPoint}).wait(20s);
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK(contains(run.err, "No space left on device"));
  CHECK(contains(run.err, "stopped writing"));
  CHECK(run.out.size() >= 2 * 1000000);  // every line still reached the console
}
