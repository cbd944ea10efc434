// The run directory against another local user (issue 42), with the real pltrun and a real
// second Unix user (helpers/other_user.h):
//   - in a --log-dir that other users may write (0777, no sticky bit), the other user
//     renames the run directory mid-run and plants a link at its name: attempt 1's logs,
//     its worker's error file and failure.json still go to the run's own directory, none
//     through the link, for pltrun's writes and for the worker's (TORCHELASTIC_ERROR_FILE);
//   - after kill -9 of pltrun, the orphan guard removes its temporary directories.

#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/other_user.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Attempt 0 says it started and waits for SYNC/go, then fails; attempt 1 writes its logs and
// an error file, and fails with 3.
std::string twoAttempts(const std::string& sync) {
  return "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then touch " + sync + "/started; while [ ! -e " + sync +
         "/go ]; do sleep 0.05; done; exit 1; fi; echo second; echo second-err >&2; "
         "printf '{\"message\": \"written by attempt 1\"}' > \"$TORCHELASTIC_ERROR_FILE\"; exit 3";
}

std::vector<std::string> regularFilesUnder(const std::string& directory) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(directory)) {
    if (fs::is_regular_file(entry.symlink_status())) files.push_back(entry.path().string());
  }
  return files;
}

}  // namespace

TEST_CASE("a run directory renamed by another user mid-run, and a link planted at its name, leads no write elsewhere",
          "[files][other_user]") {
  if (!canActAsOtherUsers()) {
    WARN("skipped: needs root, to act as a second Unix user");
    return;
  }
  const OtherUser& attacker = otherUser(1);
  TempDir dir;
  REQUIRE(chmod(dir.path().c_str(), 0755) == 0);
  const std::string shared = dir / "shared";  // other users may rename what is in it
  const std::string sync = dir / "sync";
  const std::string theirs = dir / "theirs";      // where the other user may make things
  const std::string target = theirs + "/target";  // the other user's, where the link points
  fs::create_directories(shared);
  fs::create_directories(sync);
  fs::create_directories(theirs);
  REQUIRE(chmod(shared.c_str(), 0777) == 0);
  REQUIRE(chmod(theirs.c_str(), 0777) == 0);
  std::ofstream(dir / "precious") << "keep me";
  REQUIRE(shellAs(attacker, "mkdir -m 0777 " + target) == 0);
  SECTION("an empty directory at the link's end") {}
  SECTION("a trap there: the worker's error file a link to a file of the victim") {
    REQUIRE(shellAs(attacker, "mkdir -p -m 0777 " + target + "/attempt_1/0 && ln -s " + dir.path() + "/precious " +
                                  target + "/attempt_1/0/error.json") == 0);
  }
  ChildProcess pltrun(pltrunCommand(
      {"--log-dir", shared, "--rdzv-id", "job", "--max-restarts", "1", "-r", "3", "/bin/sh", "-c", twoAttempts(sync)}));
  REQUIRE(waitForFile(sync + "/started", 60s));
  REQUIRE(shellAs(attacker, "mv " + shared + "/job " + shared + "/moved && ln -s " + target + " " + shared + "/job") ==
          0);
  std::ofstream(sync + "/go").close();
  Finished run = pltrun.wait(60s);
  INFO(run.err);
  CHECK(run.status == 3);
  CHECK(regularFilesUnder(target).empty());  // nothing written through the link
  CHECK(readFile(dir / "precious") == "keep me");
  // Everything went to the run's own directory, wherever it is now.
  const std::string moved = shared + "/moved";
  CHECK(readFile(moved + "/attempt_1/0/stdout.log") == "second\n");
  CHECK(readFile(moved + "/attempt_1/0/stderr.log") == "second-err\n");
  CHECK(contains(readFile(moved + "/attempt_1/0/error.json"), "written by attempt 1"));
  CHECK(contains(readFile(moved + "/failure.json"), "written by attempt 1"));
  CHECK(contains(run.err, "error: written by attempt 1"));  // read back through the handle
}

TEST_CASE("after kill -9 of pltrun the orphan guard removes its temporary directories", "[files][lifetime]") {
  TempDir dir;
  const std::string tmp = dir / "tmp";
  fs::create_directories(tmp);
  // --stall-timeout: the supervision files' directory too, beside the temporary run directory.
  ChildProcess pltrun(pltrunCommand({"--stall-timeout", "600", testWorker(), "signals", dir.path()}),
                      {"TMPDIR=" + tmp});
  REQUIRE(waitForFile(dir / "ready_0", 60s));
  CHECK(std::distance(fs::directory_iterator(tmp), fs::directory_iterator()) == 2);
  pltrun.signal(SIGKILL);
  Finished run = pltrun.wait(30s);
  CHECK(run.status == 128 + SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!fs::is_empty(tmp) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
  std::string left;
  for (const auto& entry : fs::directory_iterator(tmp)) left += " " + entry.path().filename().string();
  INFO("left in TMPDIR:" << left);
  CHECK(fs::is_empty(tmp));
}
