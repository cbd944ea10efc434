// The files pltrun reads because of where it runs, with a real second user (helpers/
// other_user.h) as the attacker on a shared machine (issue 42): in a world-writable, sticky
// directory (mode 1777, as /tmp) another user plants ./.deepspeed_env, a file named like a -H
// host list, or a site config, and root's pltrun, started there, refuses each with one line
// and starts nothing. Root's own files there are read, each named in one line. A host that is
// this machine (localhost) runs its agent here, without ssh: these jobs need no sshd.

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "helpers/child_process.h"
#include "helpers/other_user.h"
#include "helpers/temp_dir.h"
#include "helpers/worker_env_file.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

// A directory anyone can write, with the sticky bit (as /tmp), inside one anyone may enter.
struct SharedDirectory {
  TempDir base;
  std::string path = base / "shared";
  SharedDirectory() {
    REQUIRE(chmod(base.path().c_str(), 0755) == 0);
    REQUIRE(mkdir(path.c_str(), 0700) == 0);
    REQUIRE(chmod(path.c_str(), 01777) == 0);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// Root's pltrun started in `directory`, with a HOME that has no .deepspeed_env of its own.
Finished runPltrunIn(const std::string& directory, const std::vector<std::string>& args, const TempDir& home) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", directory};
  for (std::string& word : pltrunCommand(args)) argv.push_back(std::move(word));
  ChildProcess pltrun(argv, {"HOME=" + home.path(), "TMPDIR=" + home.path(), "PLTRUN_CONFIG="});
  return pltrun.wait(90s);
}

// The lines of `text` that contain `fragment`.
int linesWith(const std::string& text, const std::string& fragment) {
  std::istringstream lines(text);
  int count = 0;
  for (std::string line; std::getline(lines, line);) count += line.find(fragment) != std::string::npos ? 1 : 0;
  return count;
}

std::string ownerText(const OtherUser& user) { return user.name + " (uid " + std::to_string(user.uid) + ")"; }

// What root's pltrun, started in `directory`, wrote to stderr; the test fails unless it succeeded.
std::string succeededIn(const std::string& directory, const std::vector<std::string>& args, const TempDir& results) {
  const Finished end = runPltrunIn(directory, args, results);
  INFO(end.err);
  REQUIRE(end.status == 0);
  return end.err;
}

// Another user plants `name` (holding `content`) in a shared directory; root's pltrun `args`,
// started there, must refuse it: exit 2, the one error line "refused WHAT ./NAME: it belongs
// to THEM; ...", and no worker started (none wrote its variables).
void requirePlantRefused(const std::string& name, const std::string& content, const std::vector<std::string>& args,
                         const std::string& what) {
  const OtherUser& other = otherUser(1);
  SharedDirectory shared;
  TempDir results;
  REQUIRE(shellAs(other, "printf '" + content + "' > '" + (shared / name) + "'") == 0);
  std::vector<std::string> command = args;
  command.insert(command.end(), {testWorker(), "env", results.path()});
  const Finished end = runPltrunIn(shared.path, command, results);
  INFO(end.err);
  CHECK(end.status == 2);
  CHECK(linesWith(end.err,
                  "pltrun: error: refused " + what + " ./" + name + ": it belongs to " + ownerText(other) + ";") == 1);
  CHECK(linesWith(end.err, "error") == 1);
  CHECK(readFile(results / "env_0.json").empty());
}

void writeFile(const std::string& path, const std::string& content, mode_t mode = 0644) {
  std::ofstream(path) << content;
  REQUIRE(chmod(path.c_str(), mode) == 0);
}

#define SKIP_WITHOUT_OTHER_USERS()                                                 \
  if (!canActAsOtherUsers()) {                                                     \
    WARN("skipped: the test plants files as another Unix user, which needs root"); \
    return;                                                                        \
  }

}  // namespace

TEST_CASE("files here: another user's ./.deepspeed_env in a shared directory is refused in one line, nothing starts",
          "[files_here][remote][e2e]") {
  SKIP_WITHOUT_OTHER_USERS();
  // No worker runs, with or without the planted variables.
  requirePlantRefused(".deepspeed_env", "PLTRUN_TEST_FROM_FILE=planted\\nLD_PRELOAD=/x.so\\n",
                      {"--hosts", "localhost:1"}, "DeepSpeed's env file");
}

TEST_CASE("files here: your own ./.deepspeed_env in a shared directory is read and named in one line",
          "[files_here][remote][e2e]") {
  SharedDirectory shared;
  TempDir results;
  writeFile(shared / ".deepspeed_env", "PLTRUN_TEST_FROM_FILE=mine\nNCCL_DEBUG=INFO\n");
  const std::string err =
      succeededIn(shared.path, {"--hosts", "localhost:1", testWorker(), "env", results.path()}, results);
  CHECK(linesWith(err, "read 2 variables from DeepSpeed's env file ./.deepspeed_env") == 1);
  CHECK(workerEnvironment(results, 0)["PLTRUN_TEST_FROM_FILE"] == "mine");
}

TEST_CASE("files here: -H NAME is another user's file of that name: refused in one line, exit 2",
          "[files_here][remote][e2e]") {
  SKIP_WITHOUT_OTHER_USERS();
  // Read as a hostfile, it would send the job's secret to an agent on a host of their choosing.
  requirePlantRefused("localhost:1", "127.0.0.2 slots=1\\n", {"-H", "localhost:1"}, "-H localhost:1 as a hostfile");
}

TEST_CASE("files here: -H says in one line that it read a host list, or which hostfile", "[files_here][remote][e2e]") {
  SharedDirectory shared;
  TempDir results;
  const std::string listed =
      succeededIn(shared.path, {"-H", "localhost:1", testWorker(), "env", results.path()}, results);
  CHECK(linesWith(listed, "-H localhost:1: read as a host list (no file of that name)") == 1);
  CHECK(workerEnvironment(results, 0)["WORLD_SIZE"] == "1");
  writeFile(shared / "hosts", "localhost slots=2\n");
  const std::string fromFile = succeededIn(shared.path, {"-H", "hosts", testWorker(), "env", results.path()}, results);
  CHECK(linesWith(fromFile, "-H hosts: read as a hostfile, ./hosts (a file of that name here)") == 1);
  CHECK(linesWith(fromFile, "read 1 host from hostfile ./hosts") == 1);
  CHECK(workerEnvironment(results, 1)["WORLD_SIZE"] == "2");
}

TEST_CASE("files here: another user's site config (PLTRUN_CONFIG) is refused in one line, exit 2",
          "[files_here][e2e]") {
  SKIP_WITHOUT_OTHER_USERS();
  const OtherUser& other = otherUser(1);
  SharedDirectory shared;
  REQUIRE(shellAs(other, "echo 'max-restarts = 3' > '" + (shared / "pltrun.toml") + "'") == 0);
  Finished end = runPltrun({"/bin/true"}, {"PLTRUN_CONFIG=" + (shared / "pltrun.toml")});
  INFO(end.err);
  CHECK(end.status == 2);
  CHECK(linesWith(end.err, "pltrun: error: refused site config " + (shared / "pltrun.toml") + ": it belongs to " +
                               ownerText(other) + ";") == 1);
}

TEST_CASE("files here: a site config with a NUL in log-dir, or two keys for one option, is one line naming it",
          "[files_here][e2e]") {
  TempDir directory;
  writeFile(directory / "nul.toml", "log-dir = \"\\u0000\"\n");
  Finished nul = runPltrun({"/bin/true"}, {"PLTRUN_CONFIG=" + (directory / "nul.toml")});
  INFO(nul.err);
  CHECK(nul.status == 2);
  CHECK(nul.err == "pltrun: error: site config " + (directory / "nul.toml") +
                       ":1:11: 'log-dir': a NUL character (\\u0000) is in the string, and no option's value can hold "
                       "one; remove it\n");
  writeFile(directory / "twice.toml", "max-restarts = 3\nmax_restarts = 5\n");
  Finished twice = runPltrun({"/bin/true"}, {"PLTRUN_CONFIG=" + (directory / "twice.toml")});
  INFO(twice.err);
  CHECK(twice.status == 2);
  CHECK(linesWith(twice.err, "'max_restarts' and 'max-restarts' (at " + (directory / "twice.toml") +
                                 ":1:1) both set --max-restarts; keep one of them") == 1);
}

TEST_CASE("files here: a hostfile naming localhost runs a real 2-worker job on this machine without ssh",
          "[files_here][remote][e2e]") {
  TempDir directory;
  writeFile(directory / "hosts", "localhost slots=2\n");
  // No sshd runs and PATH has no ssh: the agent must start here, as mpirun starts it.
  Finished end =
      runPltrun({"--hostfile", directory / "hosts", "--rdzv-id", "local-host", testWorker(), "env", directory.path()},
                {"PATH=/nonexistent", "TMPDIR=" + directory.path(), "HOME=" + directory.path()});
  INFO(end.err);
  REQUIRE(end.status == 0);
  CHECK(linesWith(end.err, "read 1 host from hostfile " + (directory / "hosts")) == 1);
  CHECK(linesWith(end.err, "host localhost is this machine: its agent starts here, not over ssh") == 1);
  for (int rank = 0; rank < 2; ++rank) {
    const auto env = workerEnvironment(directory, rank);
    CHECK(env["WORLD_SIZE"] == "2");
    CHECK(env["TORCHELASTIC_RUN_ID"] == "local-host");
  }
}

TEST_CASE("files here: a secret_file whose path holds a comma reaches the driver's agents whole",
          "[files_here][remote][e2e]") {
  TempDir directory;
  const std::string folder = directory / "a,b";
  REQUIRE(mkdir(folder.c_str(), 0700) == 0);
  writeFile(folder + "/secret", "a secret of at least sixteen bytes\n", 0600);
  Finished end = runPltrun({"--hosts", "localhost:2", "--rdzv-conf", "secret_file=" + folder + "/secret", testWorker(),
                            "env", directory.path()},
                           {"TMPDIR=" + directory.path(), "HOME=" + directory.path()});
  INFO(end.err);
  REQUIRE(end.status == 0);
  CHECK(workerEnvironment(directory, 1)["WORLD_SIZE"] == "2");
}

TEST_CASE("files here: --start-timeout on one node says in one line that it does nothing there", "[files_here][e2e]") {
  Finished end = runPltrun({"--start-timeout", "30", "/bin/true"});
  INFO(end.err);
  CHECK(end.status == 0);
  CHECK(linesWith(end.err, "--start-timeout 30 is ignored") == 1);
}
