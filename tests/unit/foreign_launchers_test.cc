// The first command lines of mpirun's, horovodrun's and DeepSpeed's users: each reaches the
// plan pltrun's own spelling gives, or one line saying what to type (issue 29). The real
// workers' environment under these spellings is checked in tests/e2e/foreign_launchers_test.cc.

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "launcher/command_line/command_line.h"
#include "launcher/plan/device_selection.h"
#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::DeviceSelection;
using pltrun::Error;
using pltrun::FileReadError;
using pltrun::LaunchConfig;
using pltrun::WorkerCount;

namespace {

// One readable file, "hosts.txt" (two hosts of 4 slots); nothing else exists.
std::string oneHostfile(const std::string& path) {
  if (path == "hosts.txt") return "worker-1 slots=4\nworker-2 slots=4\n";
  throw FileReadError(FileReadError::Reason::Missing, "No such file or directory");
}

// hosts.txt as oneHostfile has it; "localhost:1" is a file another user could have written.
std::string plantedHostfile(const std::string& path) {
  if (path == "localhost:1") throw FileReadError(FileReadError::Reason::OthersControl, "belongs to mallory (uid 1001)");
  if (path == "a-directory") throw FileReadError(FileReadError::Reason::IsDirectory, "");
  return oneHostfile(path);
}

// The plain reader serves everything; -H's file and the hostfile go through `readOwnFile`
// where one is given (the real one refuses a file another user could have written).
std::variant<LaunchConfig, pltrun::InformationRequest> parseArguments(const std::vector<std::string>& arguments,
                                                                      const pltrun::Environment& env,
                                                                      const pltrun::FileReader& readOwnFile = nullptr) {
  std::vector<const char*> argv{"pltrun"};
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  return pltrun::parseCommandLine(static_cast<int>(argv.size()), argv.data(), env, oneHostfile,
                                  pltrun::assumeFileExists, readOwnFile);
}

LaunchConfig configOf(const std::vector<std::string>& arguments, const pltrun::Environment& env = {}) {
  auto result = parseArguments(arguments, env);
  REQUIRE(std::holds_alternative<LaunchConfig>(result));
  return std::get<LaunchConfig>(result);
}

// The one-line error for `arguments`, which must contain every fragment.
void requireRefused(const std::vector<std::string>& arguments, const std::vector<std::string>& fragments,
                    const pltrun::FileReader& readOwnFile = nullptr) {
  CAPTURE(arguments);
  std::string message;
  try {
    parseArguments(arguments, {}, readOwnFile);
  } catch (const Error& error) {
    CHECK(error.code() == pltrun::ErrorCode::InvalidArgument);
    message = error.what();
  }
  REQUIRE(!message.empty());
  CHECK(message.find('\n') == std::string::npos);
  for (const std::string& fragment : fragments) CHECK_THAT(message, Contains(fragment));
}

}  // namespace

TEST_CASE("DeepSpeed's --num_gpus is --nproc-per-node and passes --local_rank unless --no_local_rank",
          "[command_line][foreign][deepspeed]") {
  for (const char* spelling : {"--num_gpus", "--num-gpus"}) {
    LaunchConfig config = configOf({spelling, "2", "train.py", "--deepspeed"});
    REQUIRE(config.devices);
    CHECK(*config.devices == pltrun::parseDeviceSelection("2"));  // GPUs 0 and 1, as --devices 2
    CHECK(config.devices->flag == "--num_gpus");
    CHECK(config.localRankArgument);
    CHECK(config.programArgs == std::vector<std::string>{"--deepspeed"});
  }
  CHECK_FALSE(configOf({"--num_gpus=2", "--no_local_rank", "train.py"}).localRankArgument);
  // pltrun's and torchrun's spellings never add an argument the program may not declare.
  CHECK_FALSE(configOf({"--nproc-per-node", "2", "train.py"}).localRankArgument);
  CHECK(configOf({"--nproc-per-node", "2", "--pass-local-rank", "train.py"}).localRankArgument);
  CHECK(configOf({"--num_nodes", "1", "train.py"}).localRankArgument);
  requireRefused({"--num_gpus", "2", "--nproc-per-node", "4", "train.py"}, {"--num_gpus", "give one"});
  requireRefused({"--num_gpus", "0", "train.py"}, {"--num_gpus", "'0'"});
  requireRefused({"--num_nodes", "2", "train.py"}, {"--num_nodes", "hostfile"});
  requireRefused({"--pass-local-rank", "--no_local_rank", "train.py"}, {"contradict"});
}

TEST_CASE("DeepSpeed's -i/-e localhost:N on one node choose this node's GPUs, and errors name the flag typed",
          "[command_line][foreign][deepspeed]") {
  for (const char* spelling : {"-i", "--include"}) {
    LaunchConfig config = configOf({spelling, "localhost:0,2", "train.py"});
    REQUIRE(config.devices);
    CHECK(config.devices->kind == DeviceSelection::Kind::Listed);
    CHECK(config.devices->indices == std::vector<long long>{0, 2});
    CHECK(config.devices->flag == "--include");
  }
  LaunchConfig excluded = configOf({"-e", "localhost:1", "train.py"});
  REQUIRE(excluded.devices);
  CHECK(excluded.devices->kind == DeviceSelection::Kind::AllBut);
  CHECK(pltrun::selectDevices(*excluded.devices, 4) == std::vector<int>{0, 2, 3});
  // A GPU the node lacks is reported under --include, the flag the user typed.
  try {
    pltrun::selectDevices(*configOf({"--include", "localhost:5", "t.py"}).devices, 2);
    FAIL("GPU 5 of 2 was accepted");
  } catch (const Error& error) {
    CHECK_THAT(error.what(), Contains("--include") && !Contains("--devices"));
  }
  // So does the whole of localhost on a node without GPUs.
  try {
    pltrun::selectDevices(*configOf({"--include", "localhost", "t.py"}).devices, 0);
    FAIL("every GPU of none was accepted");
  } catch (const Error& error) {
    CHECK_THAT(error.what(), Contains("--include: 'localhost'") && !Contains("--devices"));
  }
  requireRefused({"--include", "node-7:0", "train.py"}, {"--include", "localhost", "-H/--hostfile"});
  requireRefused({"--exclude", "localhost", "train.py"}, {"--exclude", "every GPU"});
  requireRefused({"--include", "localhost:0", "--num_gpus", "1", "train.py"}, {"--num_gpus", "--include"});
}

TEST_CASE("DeepSpeed's -H names a hostfile when the file exists, else -H is mpirun's and horovodrun's host list",
          "[command_line][foreign][deepspeed]") {
  LaunchConfig fromFile = configOf({"-H", "hosts.txt", "--num_nodes", "1", "--num_gpus", "2", "train.py"});
  REQUIRE(fromFile.remote.hosts.size() == 1);
  CHECK(fromFile.remote.hosts[0].host == "worker-1");
  CHECK(fromFile.remote.hosts[0].slots == 2);
  CHECK(fromFile.localRankArgument);
  CHECK(configOf({"-H=hosts.txt", "train.py"}).remote.hosts.size() == 2);
  LaunchConfig listed = configOf({"-H", "a:1,b:1", "-p", "2222", "train.py"});
  CHECK(listed.remote.hosts.size() == 2);
  CHECK(listed.remote.sshPort == 2222);
  requireRefused({"-H", "hosts.txt", "--num_nodes", "3", "train.py"}, {"--num_nodes", "2 hosts"});
}

namespace {

std::variant<LaunchConfig, pltrun::InformationRequest> parsePlanted(const std::vector<std::string>& arguments) {
  return parseArguments(arguments, {}, plantedHostfile);
}

std::vector<std::string> noteTexts(const LaunchConfig& config) {
  std::vector<std::string> texts;
  for (const pltrun::LaunchNote& note : config.notes) texts.push_back(note.text);
  return texts;
}

}  // namespace

TEST_CASE("DeepSpeed's -H says in one line whether it read a hostfile or a host list, and refuses another user's file",
          "[command_line][foreign][deepspeed]") {
  using Texts = std::vector<std::string>;
  const LaunchConfig listed = configOf({"-H", "localhost:1", "train.py"});
  CHECK(noteTexts(listed) == Texts{"-H localhost:1: read as a host list (no file of that name)"});
  const LaunchConfig fromFile = configOf({"-H", "hosts.txt", "train.py"});
  CHECK(noteTexts(fromFile) == Texts{"-H hosts.txt: read as a hostfile, ./hosts.txt (a file of that name here)",
                                     "read 2 hosts from hostfile ./hosts.txt"});
  const auto directory = parsePlanted({"-Ha-directory", "train.py"});
  REQUIRE(std::holds_alternative<LaunchConfig>(directory));
  CHECK(noteTexts(std::get<LaunchConfig>(directory)) ==
        Texts{"-H a-directory: read as a host list (a directory has that name, not a file)"});
  for (const std::vector<std::string>& arguments : {std::vector<std::string>{"-H", "localhost:1", "train.py"},
                                                    std::vector<std::string>{"-H=localhost:1", "train.py"}}) {
    requireRefused(arguments,
                   {"refused -H localhost:1 as a hostfile ./localhost:1: it belongs to mallory (uid 1001);", "--hosts"},
                   plantedHostfile);
  }
}

TEST_CASE("an explicit --hostfile another user could have written is refused, naming the file and its owner",
          "[command_line][foreign]") {
  requireRefused({"--hostfile", "localhost:1", "train.py"},
                 {"refused hostfile ./localhost:1: it belongs to mallory (uid 1001);"}, plantedHostfile);
}

TEST_CASE(
    "horovodrun's --start-timeout on one node is ignored with a warning, with hosts or nodes to meet it is theirs",
    "[command_line][foreign]") {
  const LaunchConfig alone = configOf({"--start-timeout", "45", "train.py"});
  REQUIRE(alone.notes.size() == 1);
  CHECK(alone.notes[0].warning);
  CHECK_THAT(alone.notes[0].text, Catch::StartsWith("--start-timeout 45 is ignored") && Contains("--hosts"));
  CHECK(configOf({"-H", "a:1,b:1", "--start-timeout", "45", "train.py"}).notes.size() == 1);  // -H's line only
  const LaunchConfig elastic =
      configOf({"--nnodes", "1:2", "--rdzv-endpoint", "127.0.0.1:0", "--start-timeout", "45", "train.py"});
  CHECK(elastic.notes.empty());
  CHECK(elastic.rdzv.joinTimeout == std::chrono::seconds(45));
}

TEST_CASE("horovodrun's --start-timeout and --verbose, mpirun's -x, -N, --oversubscribe and -bind-to none",
          "[command_line][foreign]") {
  LaunchConfig config = configOf({"-np", "2", "--start-timeout", "45", "--verbose", "train.py"});
  CHECK(config.rdzv.joinTimeout == std::chrono::seconds(45));
  CHECK(config.verbose);
  requireRefused({"-q", "--verbose", "train.py"}, {"--quiet", "--verbose"});
  // -x on one node: the workers get it (applied by the launcher, checked end to end).
  LaunchConfig exported = configOf({"-x", "FOO=1", "-x", "HOME", "prog"});
  CHECK(exported.remote.exports == std::vector<std::string>{"FOO=1", "HOME"});
  CHECK(exported.remote.hosts.empty());
  requireRefused({"-x", "1BAD", "prog"}, {"-x", "variable name"});
  for (const char* spelling : {"-N", "-npernode", "--npernode"}) {
    CHECK(configOf({spelling, "3", "prog"}).nprocPerNode == WorkerCount::fixed(3));
  }
  CHECK(configOf({"--oversubscribe", "-np", "4", "prog"}).nprocPerNode == WorkerCount::fixed(4));
  CHECK(configOf({"-oversubscribe", "-bind-to", "none", "prog"}).program == "prog");
  requireRefused({"--bind-to", "core", "prog"}, {"--bind-to", "--numa-binding"});
  requireRefused({"-map-by", "ppr:1:node", "prog"}, {"'-map-by' is an Open MPI option", "not an MPI launcher"});
  requireRefused({"-p", "22", "prog"}, {"--ssh-port", "--hosts"});
}

TEST_CASE("an unknown option is one line with pltrun's likely spelling for it, or what to do instead",
          "[command_line][foreign]") {
  requireRefused({"--nprocs-per-node", "2", "prog"}, {"unknown option '--nprocs-per-node'", "--nproc-per-node?"});
  requireRefused({"-hostfil", "hf", "prog"}, {"unknown option '-hostfil'", "did you mean -hostfile?"});
  requireRefused({"--max-restrats=3", "prog"}, {"did you mean --max-restarts?"});
  requireRefused({"-wdir", "/tmp", "prog"}, {"'-wdir'", "start pltrun in that directory"});
  requireRefused({"--gpus", "2", "prog"}, {"--devices"});
  // Nothing close: the plain line, still one line.
  requireRefused({"--frobnicate", "prog"}, {"unknown option '--frobnicate' (see pltrun --help)"});
}
