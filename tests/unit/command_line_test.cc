// parseCommandLine: torchrun's flags in both spellings, Lightning's --devices, pltrun's own
// flags, PET_* defaults, and the rule that nothing from PROGRAM on is read as a flag. The
// environment and the files are the parser's arguments: every test gives its own.

#include "launcher/command_line/command_line.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "helpers/scoped_env.h"
#include "launcher/command_line/site_config.h"
#include "launcher/command_line/torchrun_flags.h"
#include "launcher/placement/worker_layout.h"
#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::DeviceSelection;
using pltrun::Environment;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::FileReadError;
using pltrun::InformationRequest;
using pltrun::LaunchConfig;
using pltrun::ProgramKind;
using pltrun::RendezvousBackend;
using pltrun::WorkerCount;
using pltrun::test::ScopedEnv;

namespace {

// A file system with no file in it.
std::string noFiles(const std::string&) {
  throw FileReadError(FileReadError::Reason::Missing, "No such file or directory");
}

// `arguments` without argv[0]; "pltrun" is put in front. `env` is all the parser sees of
// an environment (the test process's own is never read).
std::variant<LaunchConfig, InformationRequest> parse(const std::vector<std::string>& arguments,
                                                     const Environment& env = {},
                                                     const pltrun::FileReader& readFile = noFiles) {
  std::vector<const char*> argv{"pltrun"};
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  return pltrun::parseCommandLine(static_cast<int>(argv.size()), argv.data(), env, readFile);
}

LaunchConfig parseConfig(const std::vector<std::string>& arguments, const Environment& env = {}) {
  auto result = parse(arguments, env);
  REQUIRE(std::holds_alternative<LaunchConfig>(result));
  return std::get<LaunchConfig>(result);
}

// The error parseCommandLine throws; fails the test when it throws nothing or something else.
Error parseError(const std::vector<std::string>& arguments, const Environment& env = {}) {
  try {
    parse(arguments, env);
  } catch (const Error& error) {
    return error;
  }
  FAIL("parseCommandLine accepted an invalid command line");
  throw std::logic_error("unreachable");
}

// Requires an InvalidArgument error whose message contains every one of `fragments`.
void requireInvalid(const std::vector<std::string>& arguments, std::initializer_list<std::string> fragments,
                    const Environment& env = {}) {
  Error error = parseError(arguments, env);
  CHECK(error.code() == ErrorCode::InvalidArgument);
  for (const std::string& fragment : fragments) CHECK_THAT(error.what(), Contains(fragment));
}

}  // namespace

TEST_CASE("defaults when only PROGRAM is given", "[command_line]") {
  LaunchConfig config = parseConfig({"train.py"});
  CHECK(config.program == "train.py");
  CHECK(config.programArgs.empty());
  CHECK(config.programKind == ProgramKind::Auto);
  CHECK_FALSE(config.nprocPerNode.has_value());
  CHECK_FALSE(config.devices.has_value());
  CHECK(config.nnodes == 1);
  CHECK(config.nodeRank == 0);
  CHECK(config.masterAddr == "127.0.0.1");
  CHECK_FALSE(config.masterPort.has_value());
  CHECK(config.runId.empty());
  CHECK(config.role == "default");
  CHECK_FALSE(config.standalone);
  CHECK(config.maxRestarts == 0);
  CHECK(config.termTimeout == std::chrono::seconds(30));
  CHECK_FALSE(config.logDir.has_value());
  CHECK_FALSE(config.redirects.any());
  CHECK_FALSE(config.tee.any());
  CHECK_FALSE(config.localRanksFilter.has_value());
  CHECK(config.prefixOutput);
  CHECK_FALSE(config.quiet);
  CHECK(config.rdzv.backend == RendezvousBackend::Static);
  CHECK(config.rdzv.minNodes == 1);
  CHECK(config.rdzv.maxNodes == 1);
  CHECK(config.rdzv.endpointHost.empty());
  CHECK(config.rdzv.endpointPort == 29400);
  CHECK(config.rdzv.joinTimeout == std::chrono::seconds(600));
  CHECK_FALSE(config.rdzv.isHost.has_value());
  CHECK_FALSE(config.rdzv.nodeRankHint.has_value());
  CHECK(config.rdzv.localAddr.empty());
}

TEST_CASE("flag --nproc-per-node accepts both spellings and both value forms", "[command_line]") {
  const WorkerCount four = WorkerCount::fixed(4);
  SECTION("--nproc-per-node 4") { CHECK(parseConfig({"--nproc-per-node", "4", "p"}).nprocPerNode == four); }
  SECTION("--nproc-per-node=4") { CHECK(parseConfig({"--nproc-per-node=4", "p"}).nprocPerNode == four); }
  SECTION("--nproc_per_node 4") { CHECK(parseConfig({"--nproc_per_node", "4", "p"}).nprocPerNode == four); }
  SECTION("--nproc_per_node=4") { CHECK(parseConfig({"--nproc_per_node=4", "p"}).nprocPerNode == four); }
}

TEST_CASE("flag --nproc-per-node accepts an integer, gpu, cpu and auto", "[command_line]") {
  for (std::string value : {"1", "8", "4096", "gpu", "cpu", "auto"}) {
    INFO("value " << value);
    std::optional<WorkerCount> count = parseConfig({"--nproc-per-node", value, "p"}).nprocPerNode;
    REQUIRE(count.has_value());
    CHECK(pltrun::workerCountText(*count) == value);
  }
  CHECK(parseConfig({"--nproc-per-node", "gpu", "p"}).nprocPerNode == WorkerCount::of(WorkerCount::Kind::Gpu));
  CHECK(parseConfig({"--nproc-per-node", "cpu", "p"}).nprocPerNode == WorkerCount::of(WorkerCount::Kind::Cpu));
  CHECK(parseConfig({"--nproc-per-node", "auto", "p"}).nprocPerNode == WorkerCount::of(WorkerCount::Kind::Auto));
}

TEST_CASE("flag --nproc-per-node rejects values that are not a positive count or a keyword", "[command_line]") {
  for (std::string value : {"0", "-1", "abc", "4x", "GPU", "1.5", "4097"}) {
    INFO("value " << value);
    requireInvalid({"--nproc-per-node", value, "p"}, {"--nproc-per-node", "'" + value + "'"});
  }
  SECTION("the underscore spelling names the flag too") {
    requireInvalid({"--nproc_per_node=abc", "p"}, {"nproc", "'abc'"});
  }
}

TEST_CASE("an accepted --nproc-per-node count is one the worker layout can read", "[command_line]") {
  // The count is parsed once, here; resolveWorkerLayout takes the value as it is, so every
  // count parseCommandLine accepts, spaces around it or not, must be stored as that number.
  for (std::string value : {"4", " 4", "4 ", "\t2"}) {
    INFO("value '" << value << "'");
    std::optional<LaunchConfig> config;
    try {
      config = parseConfig({"--nproc-per-node", value, "p"});
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::InvalidArgument);  // rejecting it is fine too
      continue;
    }
    REQUIRE(config->nprocPerNode.has_value());
    CHECK(config->nprocPerNode->kind == WorkerCount::Kind::Fixed);
    CHECK(config->nprocPerNode->count == std::stoll(value));
    CHECK(pltrun::resolveWorkerLayout(config->nprocPerNode, std::nullopt, {}, 1).workerCount == std::stoll(value));
  }
}

TEST_CASE("PET_NPROC_PER_NODE is the default for --nproc-per-node", "[command_line]") {
  const Environment three{{"PET_NPROC_PER_NODE", "3"}};
  SECTION("used when the flag is absent") { CHECK(parseConfig({"p"}, three).nprocPerNode == WorkerCount::fixed(3)); }
  SECTION("the flag wins over the variable") {
    CHECK(parseConfig({"--nproc-per-node", "5", "p"}, three).nprocPerNode == WorkerCount::fixed(5));
    CHECK(parseConfig({"--nproc_per_node=gpu", "p"}, three).nprocPerNode == WorkerCount::of(WorkerCount::Kind::Gpu));
  }
  SECTION("a bad value in the variable is rejected like a bad flag") {
    requireInvalid({"p"}, {"--nproc-per-node", "'zero'"}, {{"PET_NPROC_PER_NODE", "zero"}});
  }
  SECTION("unset variable leaves the value empty") { CHECK_FALSE(parseConfig({"p"}).nprocPerNode.has_value()); }
  SECTION("an empty variable is as good as unset, as CLI11 has it") {
    CHECK_FALSE(parseConfig({"p"}, {{"PET_NPROC_PER_NODE", ""}}).nprocPerNode.has_value());
  }
}

TEST_CASE("PROGRAM and everything after it belong to the program", "[command_line]") {
  SECTION("pltrun flags after PROGRAM are program arguments, kept verbatim") {
    LaunchConfig config = parseConfig({"--nproc-per-node", "2", "prog", "--nproc-per-node", "7", "-m"});
    CHECK(config.nprocPerNode == WorkerCount::fixed(2));
    CHECK(config.program == "prog");
    CHECK(config.programArgs == std::vector<std::string>{"--nproc-per-node", "7", "-m"});
    CHECK(config.programKind == ProgramKind::Auto);  // the -m after PROGRAM is not pltrun's
  }
  SECTION("arguments with = and spaces, --help and -- after PROGRAM") {
    LaunchConfig config = parseConfig({"train.py", "--lr=0.1", "two words", "--help", "--", "-x"});
    CHECK(config.program == "train.py");
    CHECK(config.programArgs == std::vector<std::string>{"--lr=0.1", "two words", "--help", "--", "-x"});
  }
  SECTION("a program named like a number") {
    LaunchConfig config = parseConfig({"--max-restarts", "1", "./7", "3"});
    CHECK(config.program == "./7");
    CHECK(config.programArgs == std::vector<std::string>{"3"});
  }
}

TEST_CASE("missing PROGRAM is an error", "[command_line]") {
  requireInvalid({}, {"PROGRAM is missing"});
  requireInvalid({"--nproc-per-node", "2"}, {"PROGRAM is missing"});
  requireInvalid({"--standalone", "-m"}, {"PROGRAM is missing"});
}

TEST_CASE("an unambiguous prefix of a long option is that option, as torchrun's argparse reads it", "[command_line]") {
  LaunchConfig config = parseConfig({"--redirect=3", "--max-restart", "2", "--nproc_per", "3", "train.py", "--redi"});
  CHECK(config.redirects.forLocalRank(0) == 3);
  CHECK(config.maxRestarts == 2);
  CHECK(config.nprocPerNode->count == 3);
  // After PROGRAM everything is the program's, abbreviated or not.
  CHECK(config.programArgs == std::vector<std::string>{"--redi"});
  // Two options start with it: one line naming them.
  requireInvalid({"--no", "prog"}, {"ambiguous option '--no'", "--no-python", "--node-rank"});
}

TEST_CASE("an unknown option before PROGRAM is an error naming it", "[command_line]") {
  requireInvalid({"--bogus", "prog"}, {"--bogus"});
  requireInvalid({"--nproc-per-node", "2", "--frobnicate=1", "prog"}, {"--frobnicate"});
  requireInvalid({"-z", "prog"}, {"-z"});
}

TEST_CASE("flags -m, --no-python and --run-path choose how PROGRAM is started", "[command_line]") {
  SECTION("-m") {
    LaunchConfig config = parseConfig({"-m", "pkg.train", "--epochs", "3"});
    CHECK(config.programKind == ProgramKind::Module);
    CHECK(config.program == "pkg.train");
    CHECK(config.programArgs == std::vector<std::string>{"--epochs", "3"});
  }
  SECTION("--module") { CHECK(parseConfig({"--module", "pkg"}).programKind == ProgramKind::Module); }
  SECTION("--no-python") {
    LaunchConfig config = parseConfig({"--no-python", "train.py"});
    CHECK(config.programKind == ProgramKind::NoPython);
    CHECK(config.program == "train.py");
  }
  SECTION("--no_python") { CHECK(parseConfig({"--no_python", "x"}).programKind == ProgramKind::NoPython); }
  SECTION("--run-path and --run_path (torchrun 2.6+ and 1.13): a Python script whatever its name") {
    CHECK(parseConfig({"--run-path", "train"}).programKind == ProgramKind::Script);
    CHECK(parseConfig({"--run_path", "train.py"}).programKind == ProgramKind::Script);
  }
  SECTION("--run-path takes precedence over --no-python, as in torchrun") {
    CHECK(parseConfig({"--run-path", "--no-python", "train"}).programKind == ProgramKind::Script);
  }
  SECTION("-m with either of the others is an error") {
    requireInvalid({"-m", "--no-python", "prog"}, {"-m", "--no-python"});
    requireInvalid({"--no-python", "--module", "prog"}, {"--no-python"});
    requireInvalid({"--run-path", "-m", "prog"}, {"--run-path", "cannot be used together"});
  }
}

TEST_CASE("flag --max-restarts", "[command_line]") {
  CHECK(parseConfig({"--max-restarts", "3", "p"}).maxRestarts == 3);
  CHECK(parseConfig({"--max_restarts=0", "p"}).maxRestarts == 0);
  for (std::string value : {"-1", "x", "2.5", "3x"}) {
    INFO("value " << value);
    requireInvalid({"--max-restarts", value, "p"}, {"--max-restarts", "'" + value + "'"});
  }
}

TEST_CASE("flag --max-no-progress-restarts: 3 by default, 0 turns the check off", "[command_line]") {
  CHECK(parseConfig({"p"}).maxNoProgressRestarts == 3);
  CHECK(parseConfig({"--max-no-progress-restarts", "5", "p"}).maxNoProgressRestarts == 5);
  CHECK(parseConfig({"--max_no_progress_restarts=0", "p"}).maxNoProgressRestarts == 0);
  for (std::string value : {"-1", "x", "2.5"}) {
    INFO("value " << value);
    requireInvalid({"--max-no-progress-restarts", value, "p"}, {"--max-no-progress-restarts", "'" + value + "'"});
  }
}

TEST_CASE("flag --term-timeout takes seconds, fractions allowed", "[command_line]") {
  using std::chrono::milliseconds;
  CHECK(parseConfig({"--term-timeout", "5", "p"}).termTimeout == milliseconds(5000));
  CHECK(parseConfig({"--term-timeout", "0.25", "p"}).termTimeout == milliseconds(250));
  CHECK(parseConfig({"--term_timeout=0", "p"}).termTimeout == milliseconds(0));
  for (std::string value : {"-1", "-0.5", "abc", "5s", "inf", "nan"}) {
    INFO("value " << value);
    requireInvalid({"--term-timeout", value, "p"}, {"--term-timeout", "'" + value + "'"});
  }
}

TEST_CASE("flag --master-port", "[command_line]") {
  SECTION("a port is kept") { CHECK(parseConfig({"--master-port", "29500", "p"}).masterPort == 29500); }
  SECTION("0 lets the launcher pick one") {
    CHECK_FALSE(parseConfig({"--master-port", "0", "p"}).masterPort.has_value());
  }
  SECTION("out of range or not a number") {
    for (std::string value : {"70000", "65536", "-1", "http"}) {
      INFO("value " << value);
      requireInvalid({"--master-port", value, "p"}, {"--master-port", "'" + value + "'"});
    }
  }
  SECTION("--master-addr") {
    CHECK(parseConfig({"--master-addr", "10.0.0.1", "p"}).masterAddr == "10.0.0.1");
    CHECK(parseConfig({"--master_addr=node0", "p"}).masterAddr == "node0");
  }
}

TEST_CASE("flag --nnodes", "[command_line]") {
  SECTION("1") { CHECK(parseConfig({"--nnodes", "1", "p"}).nnodes == 1); }
  SECTION("a fixed range 2:2 is the same as 2") {
    LaunchConfig config = parseConfig({"--nnodes", "2:2", "--master-port", "29500", "p"});
    CHECK(config.nnodes == 2);
    CHECK(config.masterPort == 29500);
  }
  SECTION("a range is an elastic c10d job, which needs an endpoint") {
    requireInvalid({"--nnodes", "1:3", "--master-port", "29500", "p"}, {"--nnodes 1:3", "--rdzv-endpoint"});
  }
  SECTION("MIN greater than MAX names both") {
    requireInvalid({"--nnodes", "3:2", "--rdzv-endpoint", "node0", "p"}, {"--nnodes", "'3:2'", "MIN 3", "MAX 2"});
  }
  SECTION("bad counts") {
    for (std::string value : {"0", "-2", "two", "1:2:3", ":2", "2:"}) {
      INFO("value " << value);
      requireInvalid({"--nnodes", value, "--master-port", "29500", "p"}, {"--nnodes", "'" + value + "'"});
    }
  }
  SECTION("several nodes need --master-port") {
    requireInvalid({"--nnodes", "2", "p"}, {"--nnodes 2", "--master-port"});
    requireInvalid({"--nnodes", "2", "--master-port", "0", "p"}, {"--master-port"});
  }
}

TEST_CASE("flag --node-rank must be below --nnodes", "[command_line]") {
  CHECK(parseConfig({"--nnodes", "3", "--node-rank", "2", "--master-port", "1234", "p"}).nodeRank == 2);
  CHECK(parseConfig({"--node_rank=0", "p"}).nodeRank == 0);
  requireInvalid({"--nnodes", "3", "--node-rank", "3", "--master-port", "1234", "p"}, {"--node-rank", "'3'"});
  requireInvalid({"--node-rank", "1", "p"}, {"--node-rank", "'1'"});
  requireInvalid({"--node-rank", "-1", "p"}, {"--node-rank", "'-1'"});
}

TEST_CASE("flag --standalone", "[command_line]") {
  SECTION("a local job with a free port") {
    LaunchConfig config = parseConfig({"--standalone", "--master-addr", "10.1.1.1", "--master-port", "29500", "p"});
    CHECK(config.standalone);
    CHECK(config.masterAddr == "127.0.0.1");
    CHECK_FALSE(config.masterPort.has_value());
  }
  SECTION("with more than one node is an error") {
    requireInvalid({"--standalone", "--nnodes", "2", "--master-port", "29500", "p"}, {"--standalone"});
    requireInvalid({"--standalone", "--nnodes", "1:2", "--rdzv-endpoint", "node0", "p"}, {"--standalone", "'1:2'"});
  }
}

TEST_CASE("flag -r/--redirects and -t/--tee", "[command_line]") {
  SECTION("one value for every rank") {
    LaunchConfig config = parseConfig({"-r", "3", "-t", "1", "p"});
    CHECK(config.redirects.allRanks == pltrun::kBothStreams);
    CHECK(config.redirects.perRank.empty());
    CHECK(config.tee.allRanks == pltrun::kStdoutBit);
  }
  SECTION("long spellings with per-rank values") {
    LaunchConfig config = parseConfig({"--redirects=0:1,1:2", "--tee", "2", "p"});
    CHECK(config.redirects.forLocalRank(0) == pltrun::kStdoutBit);
    CHECK(config.redirects.forLocalRank(1) == pltrun::kStderrBit);
    CHECK(config.redirects.forLocalRank(2) == pltrun::kNoStream);
    CHECK(config.tee.forLocalRank(5) == pltrun::kStderrBit);
  }
  SECTION("bad values name the flag") {
    requireInvalid({"-r", "4", "p"}, {"--redirects", "'4'"});
    requireInvalid({"--tee", "x", "p"}, {"--tee", "'x'"});
  }
}

TEST_CASE("flag --local-ranks-filter", "[command_line]") {
  LaunchConfig config = parseConfig({"--local-ranks-filter", "0,2", "p"});
  REQUIRE(config.localRanksFilter.has_value());
  CHECK(*config.localRanksFilter == std::vector<int>{0, 2});
  CHECK(*parseConfig({"--local_ranks_filter=1", "p"}).localRanksFilter == std::vector<int>{1});
  requireInvalid({"--local-ranks-filter", "0,0", "p"}, {"--local-ranks-filter", "'0,0'"});
  requireInvalid({"--local-ranks-filter", "-1", "p"}, {"--local-ranks-filter", "'-1'"});
}

TEST_CASE("flag --devices is parsed now, to be resolved against the GPUs later", "[command_line]") {
  std::optional<DeviceSelection> listed = parseConfig({"--devices", "1, 3", "p"}).devices;
  REQUIRE(listed.has_value());
  CHECK(listed->kind == DeviceSelection::Kind::Listed);
  CHECK(listed->indices == std::vector<long long>{1, 3});
  CHECK(listed->spelled == "1, 3");
  std::optional<DeviceSelection> all = parseConfig({"--devices=-1", "p"}).devices;
  REQUIRE(all.has_value());
  CHECK(all->kind == DeviceSelection::Kind::All);
  CHECK(all->spelled == "-1");
  std::optional<DeviceSelection> first = parseConfig({"--devices", "[0]", "p"}).devices;
  REQUIRE(first.has_value());
  CHECK(first->kind == DeviceSelection::Kind::Listed);
  CHECK(first->indices == std::vector<long long>{0});
  CHECK(first->spelled == "[0]");
  SECTION("malformed values are refused at once, with --devices' own message") {
    requireInvalid({"--devices", "1,1", "p"}, {"--devices", "'1,1'", "GPU 1 is listed twice"});
    requireInvalid({"--devices", "abc", "p"}, {"--devices", "'abc'", "expected a GPU count"});
    requireInvalid({"p"}, {"--devices", "'-2'"}, {{"PET_DEVICES", "-2"}});
  }
}

TEST_CASE("flag --rdzv-id and --run-id set the run id", "[command_line]") {
  CHECK(parseConfig({"--rdzv-id", "job42", "p"}).runId == "job42");
  CHECK(parseConfig({"--rdzv_id=job43", "p"}).runId == "job43");
  CHECK(parseConfig({"--run-id", "job44", "p"}).runId == "job44");
  CHECK(parseConfig({"--run_id", "job45", "p"}).runId == "job45");
}

TEST_CASE("flag --role, --log-dir, --no-prefix and --quiet", "[command_line]") {
  LaunchConfig config = parseConfig({"--role", "trainer", "--log-dir", "/tmp/pltrun-logs", "--no-prefix", "-q", "p"});
  CHECK(config.role == "trainer");
  CHECK(config.logDir == "/tmp/pltrun-logs");
  CHECK_FALSE(config.prefixOutput);
  CHECK(config.quiet);
  CHECK(parseConfig({"--log_dir=/x", "--no_prefix", "p"}).logDir == "/x");
}

TEST_CASE("flag --rdzv-backend accepts static, c10d and etcd", "[command_line]") {
  CHECK(parseConfig({"--rdzv-backend", "static", "p"}).rdzv.backend == RendezvousBackend::Static);
  CHECK(parseConfig({"--rdzv_backend=c10d", "p"}).rdzv.backend == RendezvousBackend::C10d);
  requireInvalid({"--rdzv-backend", "etcd-v2", "p"}, {"--rdzv-backend", "'etcd-v2'", "use etcd"});
  requireInvalid({"--rdzv-backend", "tcp", "p"}, {"--rdzv-backend", "'tcp'"});
}

TEST_CASE("flag --rdzv-backend etcd: the members and etcd's keys", "[command_line]") {
  const LaunchConfig config =
      parseConfig({"--rdzv-backend", "etcd", "--rdzv-endpoint", "e1:2379,e2,e3:2381", "--nnodes", "1:3", "--rdzv-conf",
                   "etcd_prefix=/jobs,user=u,password_file=/pw", "p"});
  CHECK(config.rdzv.backend == RendezvousBackend::Etcd);
  REQUIRE(config.rdzv.etcd.members.size() == 3);
  CHECK(config.rdzv.etcd.members[1] == pltrun::Endpoint{"e2", 2379});
  CHECK(config.rdzv.endpointHost == "e1");
  CHECK(config.rdzv.etcd.prefix == "/jobs/");
  CHECK(config.rdzv.etcd.user == "u");
  CHECK(parseConfig({"--rdzv-backend", "etcd", "--rdzv-endpoint", "e1", "p"}).rdzv.etcd.members.size() == 1);
  requireInvalid({"--rdzv-backend", "etcd", "--nnodes", "2", "p"}, {"--rdzv-backend etcd", "--rdzv-endpoint"});
  requireInvalid({"--rdzv-backend", "c10d", "--rdzv-endpoint", "n:1", "--nnodes", "2", "--rdzv-conf", "user=u", "p"},
                 {"--rdzv-conf", "need --rdzv-backend etcd"});
  requireInvalid({"--rdzv-backend", "etcd", "--rdzv-endpoint", "e1", "--rdzv-conf", "cacert=/ca.pem", "p"},
                 {"--rdzv-conf", "cacert=/ca.pem", "need protocol=https"});
  CHECK(parseConfig(
            {"--rdzv-backend", "etcd", "--rdzv-endpoint", "e1", "--rdzv-conf", "protocol=https,cacert=/ca.pem", "p"})
            .rdzv.etcd.https);
}

TEST_CASE("c10d on one node keeps the single-node launch", "[command_line]") {
  SECTION("torch's documented form: c10d at localhost:0") {
    LaunchConfig config = parseConfig({"--rdzv-backend=c10d", "--rdzv-endpoint=localhost:0", "p"});
    CHECK(config.rdzv.backend == RendezvousBackend::C10d);
    CHECK(config.nnodes == 1);
    CHECK(config.rdzv.maxNodes == 1);
    CHECK(config.rdzv.endpointHost == "localhost");
    CHECK(config.rdzv.endpointPort == 0);
    CHECK_FALSE(config.masterPort.has_value());
  }
  SECTION("no endpoint needed") {
    LaunchConfig config = parseConfig({"--rdzv-backend", "c10d", "--nnodes", "1:1", "p"});
    CHECK(config.rdzv.backend == RendezvousBackend::C10d);
    CHECK(config.nnodes == 1);
  }
  SECTION("an endpoint without a backend on one node stays static") {
    LaunchConfig config = parseConfig({"--rdzv-endpoint", "node0:1234", "p"});
    CHECK(config.rdzv.backend == RendezvousBackend::Static);
    CHECK(config.nnodes == 1);
  }
  SECTION("--node-rank is still 0..0") {
    CHECK(parseConfig({"--rdzv-backend", "c10d", "--node-rank", "0", "p"}).nodeRank == 0);
    requireInvalid({"--rdzv-backend", "c10d", "--node-rank", "1", "p"}, {"--node-rank", "'1'"});
  }
  SECTION("a malformed endpoint is still an error") {
    requireInvalid({"--rdzv-endpoint", "node:99999", "p"}, {"--rdzv-endpoint", "'node:99999'"});
    requireInvalid({"--rdzv-backend", "c10d", "--rdzv-endpoint", "[::1", "p"}, {"--rdzv-endpoint", "'[::1'"});
  }
}

TEST_CASE("an elastic job: --nnodes MIN:MAX with c10d", "[command_line]") {
  SECTION("the backend becomes c10d on its own") {
    LaunchConfig config = parseConfig({"--nnodes", "1:3", "--rdzv-endpoint", "node0:29500", "p"});
    CHECK(config.rdzv.backend == RendezvousBackend::C10d);
    CHECK(config.rdzv.minNodes == 1);
    CHECK(config.rdzv.maxNodes == 3);
    CHECK(config.nnodes == 3);
    CHECK(config.nodeRank == 0);
    CHECK(config.rdzv.endpointHost == "node0");
    CHECK(config.rdzv.endpointPort == 29500);
  }
  SECTION("explicit c10d, torchrun's default port, both spellings") {
    LaunchConfig config = parseConfig({"--rdzv_backend=c10d", "--nnodes=2:4", "--rdzv_endpoint=node0", "p"});
    CHECK(config.rdzv.backend == RendezvousBackend::C10d);
    CHECK(config.rdzv.minNodes == 2);
    CHECK(config.rdzv.maxNodes == 4);
    CHECK(config.nnodes == 4);
    CHECK(config.rdzv.endpointHost == "node0");
    CHECK(config.rdzv.endpointPort == 29400);
  }
  SECTION("IPv6 endpoints") {
    LaunchConfig bracketed = parseConfig({"--nnodes", "1:2", "--rdzv-endpoint", "[fd00::5]:1234", "p"});
    CHECK(bracketed.rdzv.endpointHost == "fd00::5");
    CHECK(bracketed.rdzv.endpointPort == 1234);
    LaunchConfig bare = parseConfig({"--nnodes", "1:2", "--rdzv-endpoint", "fd00::5", "p"});
    CHECK(bare.rdzv.endpointHost == "fd00::5");
    CHECK(bare.rdzv.endpointPort == 29400);
  }
  SECTION("a fixed count with an endpoint is c10d too") {
    LaunchConfig config = parseConfig({"--nnodes", "2", "--rdzv-endpoint", "node0:29400", "p"});
    CHECK(config.rdzv.backend == RendezvousBackend::C10d);
    CHECK(config.rdzv.minNodes == 2);
    CHECK(config.rdzv.maxNodes == 2);
    CHECK(config.nnodes == 2);
  }
  SECTION("without an endpoint: one line saying what to add") {
    requireInvalid({"--nnodes", "1:3", "p"}, {"--nnodes 1:3", "--rdzv-endpoint HOST[:PORT], the same on every node"});
    requireInvalid(
        {"--rdzv-backend", "c10d", "--nnodes", "2", "--master-port", "29500", "p"},
        {"--rdzv-backend c10d with several nodes needs --rdzv-endpoint HOST[:PORT], the same on every node"});
    requireInvalid({"--rdzv-backend", "c10d", "--nnodes", "1:2", "p"}, {"--rdzv-backend c10d", "--rdzv-endpoint"});
  }
  SECTION("an explicit static backend cannot take a range") {
    requireInvalid({"--rdzv-backend", "static", "--nnodes", "1:3", "--rdzv-endpoint", "node0", "p"},
                   {"--nnodes", "'1:3'", "a static rendezvous needs a fixed node count",
                    "--rdzv-backend c10d --rdzv-endpoint HOST[:PORT]"});
  }
  SECTION("--master-addr and --master-port are accepted") {
    LaunchConfig config = parseConfig(
        {"--nnodes", "1:2", "--rdzv-endpoint", "node0", "--master-addr", "10.0.0.9", "--master-port", "1234", "p"});
    CHECK(config.rdzv.backend == RendezvousBackend::C10d);
    CHECK(config.rdzv.endpointHost == "node0");
  }
  SECTION("no --master-port needed") {
    CHECK_NOTHROW(parseConfig({"--nnodes", "2:2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "n:1", "p"}));
  }
  SECTION("a bad endpoint") {
    requireInvalid({"--nnodes", "1:2", "--rdzv-endpoint", ":29400", "p"}, {"--rdzv-endpoint", "':29400'", "host"});
    requireInvalid({"--nnodes", "1:2", "--rdzv-endpoint", "node0:http", "p"}, {"--rdzv-endpoint", "'node0:http'"});
  }
}

TEST_CASE("flag --node-rank with c10d is a hint below MAX", "[command_line]") {
  const std::vector<std::string> elastic{"--nnodes", "1:4", "--rdzv-endpoint", "node0"};
  auto with = [&](std::initializer_list<std::string> more) {
    std::vector<std::string> arguments = elastic;
    arguments.insert(arguments.end(), more);
    arguments.push_back("p");
    return arguments;
  };
  SECTION("stored as the hint; the node rank stays 0") {
    LaunchConfig config = parseConfig(with({"--node-rank", "3"}));
    CHECK(config.rdzv.nodeRankHint == 3);
    CHECK(config.nodeRank == 0);
    CHECK(parseConfig(with({"--node_rank=0"})).rdzv.nodeRankHint == 0);
  }
  SECTION("absent: no hint") { CHECK_FALSE(parseConfig(with({})).rdzv.nodeRankHint.has_value()); }
  SECTION("out of range") {
    requireInvalid(with({"--node-rank", "4"}), {"--node-rank", "'4'", "0..3"});
    requireInvalid(with({"--node-rank", "-1"}), {"--node-rank", "'-1'"});
    requireInvalid(with({"--node-rank", "x"}), {"--node-rank", "'x'"});
  }
  SECTION("static multi-node keeps the node rank itself") {
    LaunchConfig config = parseConfig({"--nnodes", "3", "--node-rank", "2", "--master-port", "1", "p"});
    CHECK(config.nodeRank == 2);
    CHECK_FALSE(config.rdzv.nodeRankHint.has_value());
  }
}

TEST_CASE("flag --rdzv-endpoint with an explicit static backend is rank 0's address", "[command_line]") {
  SECTION("it replaces --master-addr and --master-port, as in torchrun") {
    LaunchConfig config = parseConfig({"--rdzv-backend", "static", "--nnodes", "2", "--node-rank", "1",
                                       "--rdzv-endpoint", "node0:29600", "--master-addr", "x", "p"});
    CHECK(config.rdzv.backend == RendezvousBackend::Static);
    CHECK(config.masterAddr == "node0");
    CHECK(config.masterPort == 29600);
    CHECK(config.nodeRank == 1);
  }
  SECTION("it needs a port") {
    requireInvalid({"--rdzv-backend", "static", "--nnodes", "2", "--rdzv-endpoint", "node0", "p"},
                   {"--rdzv-endpoint", "'node0'", "HOST:PORT"});
    requireInvalid({"--rdzv-backend", "static", "--nnodes", "2", "--rdzv-endpoint", "node0:0", "p"}, {"--master-port"});
  }
}

TEST_CASE("flag --rdzv-conf sets the c10d settings", "[command_line]") {
  using std::chrono::milliseconds;
  SECTION("with an elastic job") {
    LaunchConfig config = parseConfig({"--nnodes", "1:2", "--rdzv-endpoint", "node0", "--rdzv-conf",
                                       "join_timeout=900,last_call_timeout=0.5,is_host=false", "p"});
    CHECK(config.rdzv.joinTimeout == milliseconds(900000));
    CHECK(config.rdzv.lastCallTimeout == milliseconds(500));
    CHECK(config.rdzv.isHost == false);
    CHECK(config.rdzv.closeTimeout == milliseconds(30000));
  }
  SECTION("underscore spelling, and checked on one node too") {
    CHECK(parseConfig({"--rdzv_conf=read_timeout=7", "p"}).rdzv.readTimeout == milliseconds(7000));
    CHECK_NOTHROW(parseConfig({"--rdzv-conf", "use_libuv=0", "p"}));
    requireInvalid({"--rdzv-conf", "bogus=1", "p"},
                   {"--rdzv-conf", "'bogus=1'", "unknown key 'bogus'", "join_timeout"});
    requireInvalid({"--rdzv-conf", "join_timeout", "p"}, {"--rdzv-conf", "KEY=VALUE"});
    requireInvalid({"--rdzv-conf", "join_timeout=0", "p"}, {"--rdzv-conf", "'join_timeout=0'"});
  }
}

TEST_CASE("flag --local-addr is kept", "[command_line]") {
  CHECK(parseConfig({"--local-addr", "10.1.2.3", "p"}).rdzv.localAddr == "10.1.2.3");
  CHECK(parseConfig({"--local_addr=node7", "--nnodes", "1:2", "--rdzv-endpoint", "node0", "p"}).rdzv.localAddr ==
        "node7");
}

TEST_CASE("PET_* variables are the defaults of the rendezvous flags", "[command_line]") {
  SECTION("Kubeflow's elastic PyTorchJob: PET_NNODES=1:3 and PET_RDZV_ENDPOINT") {
    const Environment env{{"PET_NNODES", "1:3"},
                          {"PET_RDZV_ENDPOINT", "job-master-0:23456"},
                          {"PET_RDZV_BACKEND", "c10d"},
                          {"PET_RDZV_CONF", "join_timeout=60,is_host=0"},
                          {"PET_RDZV_ID", "job-7"},
                          {"PET_NODE_RANK", "2"},
                          {"PET_LOCAL_ADDR", "job-worker-1"},
                          {"PET_MAX_RESTARTS", "5"}};
    LaunchConfig config = parseConfig({"p"}, env);
    CHECK(config.rdzv.backend == RendezvousBackend::C10d);
    CHECK(config.rdzv.minNodes == 1);
    CHECK(config.rdzv.maxNodes == 3);
    CHECK(config.nnodes == 3);
    CHECK(config.rdzv.endpointHost == "job-master-0");
    CHECK(config.rdzv.endpointPort == 23456);
    CHECK(config.rdzv.joinTimeout == std::chrono::seconds(60));
    CHECK(config.rdzv.isHost == false);
    CHECK(config.runId == "job-7");
    CHECK(config.rdzv.nodeRankHint == 2);
    CHECK(config.rdzv.localAddr == "job-worker-1");
    CHECK(config.maxRestarts == 5);
  }
  SECTION("PET_NNODES=1:3 and PET_RDZV_ENDPOINT alone infer c10d") {
    LaunchConfig config = parseConfig({"p"}, {{"PET_NNODES", "1:3"}, {"PET_RDZV_ENDPOINT", "[::1]:29500"}});
    CHECK(config.rdzv.backend == RendezvousBackend::C10d);
    CHECK(config.rdzv.maxNodes == 3);
    CHECK(config.rdzv.endpointHost == "::1");
    CHECK(config.rdzv.endpointPort == 29500);
  }
  SECTION("PET_NNODES=1:3 without an endpoint is the same error as the flag") {
    requireInvalid({"p"}, {"--nnodes 1:3", "--rdzv-endpoint"}, {{"PET_NNODES", "1:3"}});
  }
  SECTION("flags win over the variables") {
    LaunchConfig config = parseConfig({"--nnodes", "2:5", "--rdzv-endpoint", "flaghost:1", "p"},
                                      {{"PET_NNODES", "1:3"}, {"PET_RDZV_ENDPOINT", "envhost"}});
    CHECK(config.rdzv.minNodes == 2);
    CHECK(config.rdzv.maxNodes == 5);
    CHECK(config.rdzv.endpointHost == "flaghost");
  }
  SECTION("bad values in the variables name the flag") {
    requireInvalid({"p"}, {"--rdzv-conf", "'nope=1'"}, {{"PET_RDZV_CONF", "nope=1"}});
  }
  SECTION("Kubeflow's static PyTorchJob still works") {
    const Environment env{
        {"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_MASTER_ADDR", "job-master-0"}, {"PET_MASTER_PORT", "23456"}};
    LaunchConfig config = parseConfig({"p"}, env);
    CHECK(config.rdzv.backend == RendezvousBackend::Static);
    CHECK(config.nnodes == 2);
    CHECK(config.nodeRank == 1);
    CHECK(config.masterAddr == "job-master-0");
    CHECK(config.masterPort == 23456);
  }
}

TEST_CASE("PET_* variables of flags without a value: 1/0, true/false, as CLI11 reads them", "[command_line]") {
  CHECK(parseConfig({"p"}, {{"PET_STANDALONE", "1"}}).standalone);
  CHECK(parseConfig({"p"}, {{"PET_NO_PREFIX", "true"}}).prefixOutput == false);
  CHECK_FALSE(parseConfig({"p"}, {{"PET_QUIET", "0"}}).quiet);
  CHECK(parseConfig({"p"}, {{"PET_MODULE", "yes"}}).programKind == ProgramKind::Module);
  requireInvalid({"p"}, {"--standalone", "maybe", "(see pltrun --help)"}, {{"PET_STANDALONE", "maybe"}});
}

TEST_CASE("run id: --run-id wins over --rdzv-id, from the command line or PET_RUN_ID", "[command_line]") {
  CHECK(parseConfig({"--rdzv-id", "a", "--run-id", "b", "p"}).runId == "b");
  CHECK(parseConfig({"--run-id", "b", "p"}, {{"PET_RDZV_ID", "a"}}).runId == "b");
  CHECK(parseConfig({"--rdzv-id", "a", "p"}, {{"PET_RUN_ID", "b"}}).runId == "b");  // as CLI11 had it
  CHECK(parseConfig({"--rdzv-id", "a", "p"}, {{"PET_RDZV_ID", "x"}}).runId == "a");
  CHECK(parseConfig({"p"}, {{"PET_RDZV_ID", "a"}}).runId == "a");
}

TEST_CASE("the environment is the one given, never the process's", "[command_line]") {
  ScopedEnv processNproc("PET_NPROC_PER_NODE", std::string("7"));
  ScopedEnv processSecret("PLTRUN_SECRET_FILE", std::string("/from/the/process"));
  ScopedEnv slurmJob("SLURM_JOB_ID", std::string("99"));
  ScopedEnv slurmNodes("SLURM_NNODES", std::string("2"));
  ScopedEnv slurmNode("SLURM_NODEID", std::string("1"));
  ScopedEnv slurmList("SLURM_JOB_NODELIST", std::string("node[1-2]"));
  SECTION("an empty environment: no default from the process") {
    LaunchConfig config = parseConfig({"--nnodes", "2", "--rdzv-endpoint", "node0", "p"});
    CHECK_FALSE(config.nprocPerNode.has_value());
    CHECK(config.rdzv.secretFile.empty());
    LaunchConfig alone = parseConfig({"p"});
    CHECK(alone.nnodes == 1);
    CHECK_FALSE(alone.slurmSummary.has_value());
  }
  SECTION("the given one's values") {
    LaunchConfig config = parseConfig({"--nnodes", "2", "--rdzv-endpoint", "node0", "p"},
                                      {{"PET_NPROC_PER_NODE", "3"}, {"PLTRUN_SECRET_FILE", "/given"}});
    CHECK(config.nprocPerNode == WorkerCount::fixed(3));
    CHECK(config.rdzv.secretFile == "/given");
  }
}

TEST_CASE("a hostfile is read through the reader given", "[command_line]") {
  std::vector<std::string> asked;
  auto reader = [&asked](const std::string& path) -> std::string {
    asked.push_back(path);
    if (path == "/virtual/hosts") return "# two hosts\nnode-a slots=2\nnode-b:3\n";
    if (path == "/virtual/dir") throw FileReadError(FileReadError::Reason::IsDirectory, "");
    if (path == pltrun::kSiteConfigPath) throw FileReadError(FileReadError::Reason::Missing, "");
    throw FileReadError(FileReadError::Reason::CannotOpen, "Permission denied");
  };
  auto result = parse({"--hostfile", "/virtual/hosts", "p"}, {}, reader);
  REQUIRE(std::holds_alternative<LaunchConfig>(result));
  const LaunchConfig& config = std::get<LaunchConfig>(result);
  REQUIRE(config.remote.hosts.size() == 2);
  CHECK(config.remote.hosts[0].host == "node-a");
  CHECK(config.remote.hosts[0].slots == 2);
  CHECK(config.remote.hosts[1].host == "node-b");
  CHECK(config.remote.hosts[1].slots == 3);
  CHECK(config.nnodes == 2);
  CHECK(asked == std::vector<std::string>{pltrun::kSiteConfigPath, "/virtual/hosts"});

  SECTION("the reader's failures are the hostfile's one-line errors") {
    auto error = [&](const std::string& path) {
      try {
        parse({"--hostfile", path, "p"}, {}, reader);
      } catch (const Error& failure) {
        CHECK(failure.code() == ErrorCode::InvalidArgument);
        return std::string(failure.what());
      }
      FAIL("the hostfile " << path << " was accepted");
      return std::string();
    };
    CHECK(error("/virtual/locked") ==
          "cannot read hostfile /virtual/locked: Permission denied; check the path given for the hostfile");
    CHECK(error("/virtual/dir") == "hostfile /virtual/dir is a directory; give the path of a file");
  }
}

TEST_CASE("the help describes the c10d flags", "[command_line]") {
  auto result = parse({"--help"});
  REQUIRE(std::holds_alternative<InformationRequest>(result));
  const std::string& text = std::get<InformationRequest>(result).text;
  CHECK_THAT(text, Contains("MIN:MAX"));
  CHECK_THAT(text, Contains("--rdzv-endpoint"));
  CHECK_THAT(text, Contains("join_timeout"));
  CHECK_THAT(text, !Contains("unused on a single node"));
}

TEST_CASE("flag --help and --version are information requests", "[command_line]") {
  SECTION("--help") {
    auto result = parse({"--help"});
    REQUIRE(std::holds_alternative<InformationRequest>(result));
    const std::string& text = std::get<InformationRequest>(result).text;
    CHECK_THAT(text, Contains("PROGRAM"));
    CHECK_THAT(text, Contains("--nproc-per-node"));
    CHECK_THAT(text, Contains("--devices"));
  }
  SECTION("-h, even with other flags") {
    auto result = parse({"--nproc-per-node", "2", "-h"});
    CHECK(std::holds_alternative<InformationRequest>(result));
  }
  SECTION("--version") {
    auto result = parse({"--version"});
    REQUIRE(std::holds_alternative<InformationRequest>(result));
    CHECK_THAT(std::get<InformationRequest>(result).text, Contains("pltrun"));
  }
  SECTION("--version alone answers as CLI11 does after other flags") {
    auto alone = parse({"--version"});
    auto afterFlags = parse({"-q", "--nproc-per-node", "2", "--version"});
    REQUIRE(std::holds_alternative<InformationRequest>(afterFlags));
    CHECK(std::get<InformationRequest>(alone).text == std::get<InformationRequest>(afterFlags).text);
  }
}

TEST_CASE("the rendezvous secret file: --rdzv-conf secret_file, else PLTRUN_SECRET_FILE", "[command_line]") {
  const std::vector<std::string> elastic = {"--nnodes", "2", "--rdzv-endpoint", "node0:29400"};
  auto parse = [&](std::vector<std::string> extra, const Environment& env) {
    std::vector<std::string> args = elastic;
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("p");
    return parseConfig(args, env);
  };
  const Environment variable{{"PLTRUN_SECRET_FILE", "/run/secrets/job"}};
  SECTION("neither: no authentication") { CHECK(parse({}, {}).rdzv.secretFile.empty()); }
  SECTION("the variable alone") { CHECK(parse({}, variable).rdzv.secretFile == "/run/secrets/job"); }
  SECTION("the flag wins over the variable") {
    CHECK(parse({"--rdzv-conf", "join_timeout=60,secret_file=/home/me/.pltrun/secret"}, variable).rdzv.secretFile ==
          "/home/me/.pltrun/secret");
  }
}

TEST_CASE("horovodrun and mpirun -np N: N workers on one node, or the first N slots of the hosts", "[command_line]") {
  LaunchConfig config = parseConfig({"-np", "3", "train.py"});
  REQUIRE(config.nprocPerNode);
  CHECK(config.nprocPerNode->kind == WorkerCount::Kind::Fixed);
  CHECK(config.nprocPerNode->count == 3);
  CHECK(parseConfig({"--np=2", "train.py"}).nprocPerNode->count == 2);
  CHECK(parseConfig({"-np", "2", "--nproc-per-node", "2", "train.py"}).nprocPerNode->count == 2);
  // After PROGRAM, -np is the program's; and the value of an option before it is skipped.
  config = parseConfig({"--rdzv-id", "-np", "./mpi_app", "-np", "4"});
  CHECK(config.runId == "-np");
  CHECK(config.program == "./mpi_app");
  CHECK(config.programArgs == std::vector<std::string>{"-np", "4"});
  CHECK_FALSE(config.nprocPerNode);
  config = parseConfig({"--hosts", "a:2,b:2,c:4", "-np", "3", "train.py"});
  REQUIRE(config.remote.hosts.size() == 2);
  CHECK(config.remote.hosts[0].slots == 2);
  CHECK(config.remote.hosts[1].host == "b");
  CHECK(config.remote.hosts[1].slots == 1);
  CHECK(config.nnodes == 2);
  requireInvalid({"-np", "3", "--nproc-per-node", "2", "train.py"}, {"-np 3", "--nproc-per-node 2", "disagree"});
  requireInvalid({"-np", "0", "train.py"}, {"-np", "'0'"});
  requireInvalid({"-np", "4", "--nnodes", "2", "train.py"}, {"--nnodes", "--nproc-per-node instead"});
  requireInvalid({"--hosts", "a:2,b:2", "-np", "5", "train.py"}, {"-np 5", "offer 4 slots"});
  requireInvalid({"--hosts", "a,b", "-np", "2", "train.py"}, {"slot count", "a:N"});
}

namespace {

// A file system holding one file, the site config at `path`.
pltrun::FileReader siteFile(const std::string& path, const std::string& content) {
  return [path, content](const std::string& wanted) {
    if (wanted == path) return content;
    return noFiles(wanted);
  };
}

LaunchConfig parseWithSite(const std::vector<std::string>& arguments, const std::string& content,
                           const Environment& env = {}) {
  auto result = parse(arguments, env, siteFile("/etc/pltrun.toml", content));
  REQUIRE(std::holds_alternative<LaunchConfig>(result));
  return std::get<LaunchConfig>(result);
}

std::string siteError(const std::vector<std::string>& arguments, const std::string& content,
                      const Environment& env = {}) {
  try {
    parse(arguments, env, siteFile("/etc/pltrun.toml", content));
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    return error.what();
  }
  FAIL("the site config was accepted");
  return "";
}

}  // namespace

TEST_CASE("site defaults: /etc/pltrun.toml fills what the flags and PET_* variables leave out", "[command_line]") {
  const std::string site =
      "# cluster defaults\nmax-restarts = 3\nnproc_per_node = \"2\"\nterm-timeout = 60\nno-prefix = true\n"
      "rdzv-conf = \"join_timeout=900\"\nexport = [\"NCCL_DEBUG\", \"HF_HOME\"]\nssh-port = 2222\n";
  SECTION("the file alone") {
    LaunchConfig config = parseWithSite({"train.py"}, site);
    CHECK(config.maxRestarts == 3);
    CHECK(config.nprocPerNode == WorkerCount::fixed(2));
    CHECK(config.termTimeout == std::chrono::seconds(60));
    CHECK_FALSE(config.prefixOutput);
    CHECK(config.rdzv.joinTimeout == std::chrono::seconds(900));
    CHECK_FALSE(config.remote.sshPort);  // the driver's options: only for runs with hosts
  }
  SECTION("the driver's options apply to a run with hosts, a TOML array as a comma list") {
    LaunchConfig config = parseWithSite({"--hosts", "a:2,b:2", "train.py"}, site);
    CHECK(config.remote.sshPort == 2222);
    CHECK(config.remote.exports == std::vector<std::string>{"NCCL_DEBUG", "HF_HOME"});
  }
  SECTION("a flag wins over its PET_* variable, which wins over the file") {
    LaunchConfig config = parseWithSite({"--max-restarts", "1", "train.py"}, "max-restarts = 3\nterm-timeout = 60\n",
                                        {{"PET_TERM_TIMEOUT", "7"}});
    CHECK(config.maxRestarts == 1);
    CHECK(config.termTimeout == std::chrono::seconds(7));
  }
  SECTION("PLTRUN_CONFIG names another file, and PLTRUN_CONFIG= none") {
    auto other = parse({"train.py"}, {{"PLTRUN_CONFIG", "/site/pltrun.toml"}},
                       siteFile("/site/pltrun.toml", "max-restarts = 4\n"));
    CHECK(std::get<LaunchConfig>(other).maxRestarts == 4);
    CHECK(parseWithSite({"train.py"}, "max-restarts = 3\n", {{"PLTRUN_CONFIG", ""}}).maxRestarts == 0);
  }
  SECTION("no file at the default path: no site defaults") { CHECK(parseConfig({"train.py"}).maxRestarts == 0); }
  SECTION("the probe says the default file is absent: it is not read") {
    std::vector<const char*> argv{"pltrun", "train.py"};
    auto absent = [](const std::string&) { return false; };
    auto result =
        pltrun::parseCommandLine(2, argv.data(), {}, siteFile("/etc/pltrun.toml", "max-restarts = 3\n"), absent);
    CHECK(std::get<LaunchConfig>(result).maxRestarts == 0);
  }
}

TEST_CASE("site defaults: a bad file is one line naming the file and the key", "[command_line]") {
  CHECK_THAT(
      siteError({"p"}, "bogus = 1\n"),
      Contains("site config /etc/pltrun.toml:1:1: 'bogus' is not a pltrun option") && Contains("max-restarts = 3"));
  CHECK_THAT(siteError({"p"}, "[cluster]\nmax-restarts = 1\n"),
             Contains("site config /etc/pltrun.toml:1:2: 'cluster': sections are not read"));
  CHECK_THAT(siteError({"p"}, "version = true\n"), Contains("'version' is not a pltrun option"));
  // What places one job would make every job on every node one job, and hide Slurm's variables.
  for (const char* key : {"nnodes = 2", "hosts = \"a,b\"", "rdzv_endpoint = \"store:29400\"", "rdzv-id = \"x\""}) {
    CHECK_THAT(siteError({"p"}, std::string(key) + "\n"),
               Contains("places one job, so it goes on that job's command line") && Contains("site config"));
  }
  // A value the plan refuses is traced to the file, not blamed on a flag nobody typed.
  CHECK_THAT(siteError({"p"}, "max-restarts = \"many\"\n"),
             Contains("--max-restarts: 'many' is not valid") && Contains("(set in site config /etc/pltrun.toml:1:16)"));
  CHECK_THAT(siteError({"p"}, "", {{"PLTRUN_CONFIG", "/nowhere.toml"}}),
             Contains("site config /nowhere.toml: No such file or directory (named by PLTRUN_CONFIG)"));
}

TEST_CASE("site defaults: sections and dotted keys of any depth are refused by place, at once",
          "[command_line][bounded]") {
  // Before: CLI11 built each level of [a.a. ... .a] (time and memory grew with the depth) and ignored a
  // dotted key past 255 levels without a word. toml++ builds them too, and 32000 levels
  // (64 KiB) overflowed the stack freeing them: the dots are counted before it parses.
  std::string deep = "[a";
  for (int level = 0; level < 32000; ++level) deep += ".a";
  CHECK_THAT(siteError({"p"}, deep + "]\nmax-restarts = 1\n"),
             Contains("site config /etc/pltrun.toml:1:515: more than 256 dots outside strings") &&
                 Contains("sections are not read"));
  std::string dotted = "a";
  for (int level = 0; level < 300; ++level) dotted += ".a";
  CHECK_THAT(siteError({"p"}, "max-restarts = 1\n" + dotted + " = 2\n"),
             Contains("site config /etc/pltrun.toml:2:514: more than 256 dots outside strings"));
  CHECK_THAT(siteError({"p"}, "max-restarts = 1\nx.y = 2\n"),
             Contains("site config /etc/pltrun.toml:2:1: 'x': sections are not read"));
  // Dots in strings and comments are no keys' levels: a file of paths and addresses is read.
  const std::string dots(300, '.');
  LaunchConfig config =
      parseWithSite({"p"}, "# " + dots + "\nrole = \"" + dots + "\"\nlog-dir = '''\n" + dots + "'''\n");
  CHECK(config.role == dots);
  CHECK(config.logDir == dots);
  CHECK_THAT(siteError({"p"}, std::string(70000, '#') + "\n"), Contains("a site file of options is at most 65536"));
}

TEST_CASE("site defaults: what a job says another way drops the file's setting instead of contradicting it",
          "[command_line]") {
  LaunchConfig devices = parseWithSite({"--devices", "0,1", "p"}, "nproc-per-node = 8\n");
  CHECK_FALSE(devices.nprocPerNode);
  CHECK(devices.devices);
  CHECK(parseWithSite({"p"}, "nproc-per-node = 8\n", {{"PET_NP", "3"}}).nprocPerNode == WorkerCount::fixed(3));
  CHECK(parseWithSite({"p"}, "nproc-per-node = 8\n").nprocPerNode == WorkerCount::fixed(8));
}

TEST_CASE("site defaults: TOML 1.0 strings as written, multi-line, escaped and literal",
          "[command_line][site-config]") {
  // Before (CLI11's subset): """multi""" became ""multi"" and \u0041 stayed as written.
  CHECK(parseWithSite({"p"}, "role = \"\"\"multi\"\"\"\n").role == "multi");
  CHECK(parseWithSite({"p"}, "role = \"a\\u0041b\"\n").role == "aAb");
  CHECK(parseWithSite({"p"}, "role = \"tab\\there \\\"q\\\" \\U0001F600\"\n").role ==
        "tab\there \"q\" \xF0\x9F\x98\x80");
  CHECK(parseWithSite({"p"}, "log-dir = 'C:\\logs\\new'\n").logDir == "C:\\logs\\new");  // literal: no escapes
  CHECK(parseWithSite({"p"}, "log-dir = '''\n/var/log/'pltrun''''\n").logDir == "/var/log/'pltrun'");
  CHECK(parseWithSite({"p"}, "role = \"\"\"\ntrain\\\n   er\"\"\"\n").role == "trainer");  // \ at a line's end
  CHECK(parseWithSite({"p"}, "\"role\" = \"quoted key\" # a comment\n").role == "quoted key");
}

TEST_CASE("site defaults: integers, floats, booleans and arrays reach numeric, flag and list options",
          "[command_line][site-config]") {
  CHECK(parseWithSite({"p"}, "max-restarts = 1_0\n").maxRestarts == 10);
  CHECK(parseWithSite({"p"}, "max-restarts = 0x3\n").maxRestarts == 3);
  CHECK(parseWithSite({"p"}, "term-timeout = 2.5\n").termTimeout == std::chrono::milliseconds(2500));
  CHECK_FALSE(parseWithSite({"p"}, "no-prefix = true\n").prefixOutput);
  CHECK(parseWithSite({"p"}, "no-prefix = false\n").prefixOutput);
  LaunchConfig listed = parseWithSite({"p"}, "devices = [1, 3]\n");  // one value: the comma list
  REQUIRE(listed.devices);
  CHECK(listed.devices->indices == std::vector<long long>{1, 3});
  LaunchConfig driven = parseWithSite({"--hosts", "a:1,b:1", "p"}, "export = [\"NCCL_DEBUG\", 'HF_HOME']\n");
  CHECK(driven.remote.exports == std::vector<std::string>{"NCCL_DEBUG", "HF_HOME"});  // many values: one each
}

TEST_CASE("site defaults: [rdzv-conf] is --rdzv-conf's pairs, in the order written", "[command_line][site-config]") {
  CHECK(parseWithSite({"p"}, "[rdzv-conf]\njoin_timeout = 900\n").rdzv.joinTimeout == std::chrono::seconds(900));
  CHECK(parseWithSite({"p"}, "rdzv-conf = { join_timeout = 120 }\n").rdzv.joinTimeout == std::chrono::seconds(120));
  CHECK(parseWithSite({"p"}, "rdzv_conf.join_timeout = 60\n").rdzv.joinTimeout == std::chrono::seconds(60));
  // `pltrun status` reads the same pairs from the file.
  const std::string site =
      "max-restarts = 2\n[rdzv-conf]\nsecret_file = \"/s\"\njoin_timeout = 900\n"
      "expected_hosts = [\"a\", \"b\"]\n";
  auto exists = [](const std::string&) { return true; };
  CHECK(pltrun::siteConfigValue("rdzv-conf", {}, siteFile("/etc/pltrun.toml", site), exists) ==
        "secret_file=/s,join_timeout=900,expected_hosts=a,b");
  CHECK(pltrun::siteConfigValue("max-restarts", {}, siteFile("/etc/pltrun.toml", site), exists) == "2");
  // A value the plan refuses is traced to the table.
  CHECK_THAT(siteError({"p"}, "\n[rdzv-conf]\njoin_timeout = \"soon\"\n"),
             Contains("--rdzv-conf") && Contains("(set in site config /etc/pltrun.toml:2:1)"));
  CHECK_THAT(siteError({"p"}, "[rdzv-conf.tls]\ncert = \"c\"\n"),
             Contains("site config /etc/pltrun.toml:1:1: 'rdzv-conf.tls': a table is no option's value"));
}

TEST_CASE("site defaults: two keys for one option are refused, naming both and the file",
          "[command_line][site-config]") {
  // The command line refuses --max-restarts with --max_restarts; the file took the first.
  CHECK(siteError({"p"}, "max-restarts = 3\nmax_restarts = 5\n") ==
        "site config /etc/pltrun.toml:2:1: 'max_restarts' and 'max-restarts' (at /etc/pltrun.toml:1:1) both set "
        "--max-restarts; keep one of them");
  CHECK_THAT(siteError({"p"}, "nproc_per_node = 2\nlog-dir = \"/l\"\nnproc-per-node = 4\n"),
             Contains("/etc/pltrun.toml:3:1: 'nproc-per-node' and 'nproc_per_node' (at /etc/pltrun.toml:1:1)"));
  // Given on the command line, the option is still the file's mistake to report.
  CHECK_THAT(siteError({"--max-restarts", "1", "p"}, "max_restarts = 3\nmax-restarts = 5\n"),
             Contains("'max-restarts' and 'max_restarts'"));
}

TEST_CASE("site defaults: a NUL in a string is refused by place and key, never cut short",
          "[command_line][site-config]") {
  CHECK(siteError({"p"}, "log-dir = \"\\u0000\"\n") ==
        "site config /etc/pltrun.toml:1:11: 'log-dir': a NUL character (\\u0000) is in the string, and no option's "
        "value can hold one; remove it");
  CHECK_THAT(siteError({"p"}, "[rdzv-conf]\nsecret_file = \"/s\\u0000x\"\n"),
             Contains("'rdzv-conf.secret_file': a NUL"));
}

TEST_CASE("site defaults: [rdzv-conf] values with commas reach the rendezvous whole", "[command_line][site-config]") {
  const LaunchConfig config = parseWithSite({"p"}, "[rdzv-conf]\nsecret_file = \"/s/a,b=c\"\njoin_timeout = 9\n");
  CHECK(config.rdzv.secretFile == "/s/a,b=c");
  CHECK(config.rdzv.joinTimeout == std::chrono::seconds(9));
}

TEST_CASE("site defaults: the file read is named in one line for the log", "[command_line][site-config]") {
  const LaunchConfig config = parseWithSite({"p"}, "max-restarts = 3\nterm-timeout = 9\n");
  REQUIRE(!config.notes.empty());
  CHECK(config.notes.front().text == "read site config /etc/pltrun.toml (2 settings applied)");
  CHECK(parseConfig({"p"}).notes.empty());  // no file, no line
}

TEST_CASE("site defaults: what is not TOML is one line naming the file, line, column and key",
          "[command_line][site-config]") {
  std::vector<std::string> messages;
  const auto refused = [&](const std::string& content) {
    messages.push_back(siteError({"p"}, content));
    return messages.back();
  };
  // Before: the second value won silently (CLI11 made it '3,4').
  CHECK_THAT(refused("max-restarts = 3\nterm-timeout = 60\nmax-restarts = 4\n"),
             Contains("site config /etc/pltrun.toml:3:16: not valid TOML at 'max-restarts'") &&
                 Contains("each key is given once: remove one of them"));
  // Before: an unterminated string was taken as it stood.
  CHECK_THAT(refused("role = \"x\nmax-restarts = 1\n"),
             Contains("site config /etc/pltrun.toml:1:10: not valid TOML at 'role'") &&
                 Contains("a string ends on its line with the quote that opened it"));
  CHECK_THAT(refused("max-restarts = 1\nrole = \"\"\"x\n"),
             Contains("site config /etc/pltrun.toml:2:13: not valid TOML at 'role': error while parsing string"));
  CHECK_THAT(refused("log-dir = \"C:\\logs\"\n"),
             Contains("site config /etc/pltrun.toml:1:15: not valid TOML at 'log-dir'") &&
                 Contains("'...' takes it as written"));
  CHECK_THAT(refused("max-restarts 3\n"), Contains("site config /etc/pltrun.toml:1:14: not valid TOML"));
  CHECK_THAT(refused("role = \"a\"\nmax-restarts = 1979-05-27\n"),
             Contains("site config /etc/pltrun.toml:2:16: 'max-restarts': a date or time is no option's value"));
  CHECK_THAT(refused("export = [[\"A\"]]\n"),
             Contains("site config /etc/pltrun.toml:1:11: 'export': an array inside an array"));
  CHECK_THAT(refused("max-restarts = []\n"),
             Contains("site config /etc/pltrun.toml:1:16: 'max-restarts': an empty array is no option's value"));
  CHECK_THAT(refused("[[jobs]]\nmax-restarts = 1\n"), Contains("'jobs': a table is no option's value"));
  CHECK_THAT(refused("max-restarts = 1\n  bogus = 2\n"),
             Contains("site config /etc/pltrun.toml:2:3: 'bogus' is not a pltrun option"));
  for (const std::string& message : messages) {
    INFO(message);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("flag --start-method takes what torch allows, and nothing pltrun would ignore", "[command_line]") {
  for (const char* method : {"spawn", "fork", "forkserver"}) {
    CHECK(parseConfig({"--start-method", method, "prog"}).program == "prog");
  }
  requireInvalid({"--start-method", "thread", "prog"}, {"--start-method", "spawn, fork or forkserver"});
}

TEST_CASE("torchrun 2.x plugin flags: one line each saying why, what pltrun does anyway accepted, NUMA modes",
          "[command_line]") {
  requireInvalid({"--logs-specs", "mine", "prog"}, {"--logs-specs", "Python plugin"});
  CHECK(parseConfig({"--logs_specs=default", "prog"}).program == "prog");  // torchrun's own layout: pltrun's
  requireInvalid({"--event-log-handler", "console", "prog"}, {"--event-log-handler", "events.jsonl"});
  CHECK(parseConfig({"--event-log-handler", "null", "prog"}).program == "prog");
  CHECK(parseConfig({"--numa-binding", "exclusive", "prog"}).numaBinding == pltrun::NumaMode::Exclusive);
  CHECK_FALSE(parseConfig({"prog"}).numaBinding.has_value());
  requireInvalid({"--numa_binding", "cores", "prog"}, {"--numa-binding", "node, socket, exclusive or core-complex"});
  CHECK(parseConfig({"--signals-to-handle", "SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1", "prog"}).program == "prog");
  requireInvalid({"--signals_to_handle", "SIGTERM,SIGWINCH", "prog"}, {"--signals-to-handle", "SIGWINCH"});
}

TEST_CASE("torchrun 2.14's --shutdown-timeout is --term-timeout, TORCH_ELASTIC_SHUTDOWN_TIMEOUT its default",
          "[command_line][torchrun214]") {
  using std::chrono::milliseconds;
  CHECK(parseConfig({"--shutdown-timeout", "7", "prog"}).termTimeout == milliseconds(7000));
  CHECK(parseConfig({"--shutdown_timeout", "7", "--term-timeout", "7", "prog"}).termTimeout == milliseconds(7000));
  requireInvalid({"--shutdown-timeout", "7", "--term-timeout", "3", "prog"}, {"disagree"});
  requireInvalid({"--shutdown-timeout", "soon", "prog"}, {"--shutdown-timeout", "soon"});
  CHECK(parseConfig({"prog"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "12"}}).termTimeout == milliseconds(12000));
  CHECK(parseConfig({"--term-timeout", "2", "prog"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "12"}}).termTimeout ==
        milliseconds(2000));
  requireInvalid({"prog"}, {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "x"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "x"}});
}

TEST_CASE("torchrun 2.14's --log-line-prefix-template wins over TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE",
          "[command_line][torchrun214]") {
  const Environment env{{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "[${rank}]"}};
  CHECK(parseConfig({"prog"}, env).linePrefixTemplate == "[${rank}]");
  CHECK(parseConfig({"--log-line-prefix-template", "${hostname}:${rank}: ", "prog"}, env).linePrefixTemplate ==
        "${hostname}:${rank}: ");
}

TEST_CASE("torchrun 2.14's --duplicate-*-filters: comma-separated, a double comma is a comma",
          "[command_line][torchrun214]") {
  LaunchConfig config =
      parseConfig({"--duplicate-stdout-filters", "apple,or,,ange", "--duplicate_stderr_filters", "Error", "prog"});
  CHECK(config.duplicateStdoutFilters == std::vector<std::string>{"apple", "or,ange"});
  CHECK(config.duplicateStderrFilters == std::vector<std::string>{"Error"});
  CHECK(pltrun::parseDuplicateFilters("").empty());         // an empty list duplicates nothing
  CHECK(pltrun::parseDuplicateFilters(",a,").size() == 1);  // nor does an empty filter match all
}

TEST_CASE("torchrun 2.14's --virtual-local-rank, and --nproc-per-node xpu refused with the reason",
          "[command_line][torchrun214]") {
  CHECK(parseConfig({"--virtual-local-rank", "prog"}).virtualLocalRank);
  CHECK_FALSE(parseConfig({"prog"}).virtualLocalRank);
  requireInvalid({"--nproc-per-node", "xpu", "prog"}, {"xpu", "NVIDIA GPUs only"});
}

TEST_CASE("torchrun 2.14's --print-completion prints a script for bash, zsh or tcsh, no PROGRAM needed",
          "[command_line][torchrun214]") {
  for (const char* shell : {"bash", "zsh", "tcsh"}) {
    auto result = parse({"--print-completion", shell});
    REQUIRE(std::holds_alternative<InformationRequest>(result));
    const std::string script = std::get<InformationRequest>(result).text;
    CAPTURE(shell, script);
    CHECK_THAT(script, Contains("pltrun"));
    CHECK_THAT(script, Contains("nproc-per-node"));
    CHECK_THAT(script, Contains("duplicate_stderr_filters"));
    CHECK_THAT(script, !Contains("exit-with-parent"));  // internal
  }
  requireInvalid({"--print-completion", "fish"}, {"bash, zsh or tcsh"});
}

TEST_CASE("TORCHELASTIC_HEALTH_CHECK_PORT gets one line saying no server is started", "[command_line][torchrun214]") {
  CHECK(pltrun::healthCheckPortNotice({}).empty());
  CHECK_THAT(pltrun::healthCheckPortNotice({{"TORCHELASTIC_HEALTH_CHECK_PORT", "8080"}}),
             Contains("no health-check server"));
}

TEST_CASE("mpirun's and horovodrun's one-dash spellings mean what they mean there, never -h",
          "[command_line][foreign]") {
  auto reader = [](const std::string& path) -> std::string {
    if (path == "hf") return "node-a slots=2\nnode-b slots=2\n";
    return noFiles(path);
  };
  for (const char* spelling : {"-hostfile", "-machinefile", "--hostfile"}) {
    CAPTURE(spelling);
    auto result = parse({"-np", "4", spelling, "hf", "prog"}, {}, reader);
    REQUIRE(std::holds_alternative<LaunchConfig>(result));
    CHECK(std::get<LaunchConfig>(result).remote.hosts.size() == 2);
  }
  for (const char* spelling : {"-host", "-hosts", "--host", "-H"}) {
    CAPTURE(spelling);
    CHECK(parseConfig({spelling, "node-a:2,node-b:2", "prog"}).remote.hosts.size() == 2);
  }
  CHECK(parseConfig({"-n", "3", "prog"}).nprocPerNode == WorkerCount::fixed(3));
}

TEST_CASE("an unknown one-dash word or an Open MPI option is one line, never the help", "[command_line][foreign]") {
  requireInvalid({"-hostx", "prog"}, {"unknown option '-hostx'"});
  requireInvalid({"-mca", "btl", "tcp", "prog"}, {"'-mca' is an Open MPI option", "not an MPI launcher"});
  requireInvalid({"--bind-to", "core", "prog"}, {"--bind-to", "--numa-binding"});
  // -r3 is -r 3, as torchrun's argparse reads it.
  CHECK(parseConfig({"-r3", "prog"}).redirects.any());
}

TEST_CASE("the program's own words after PROGRAM are never read, after a flag either", "[command_line][foreign]") {
  // A flag (no value) before PROGRAM: PROGRAM is not taken for the flag's value, so the
  // program's --log is not expanded to --log-dir nor its -hostx refused.
  LaunchConfig config = parseConfig({"--standalone", "--no-python", "prog", "--log", "1", "-hostx", "-mca"});
  CHECK(config.program == "prog");
  CHECK(config.programArgs == std::vector<std::string>{"--log", "1", "-hostx", "-mca"});
}

TEST_CASE("a bad value from a PET_ variable names the variable", "[command_line]") {
  requireInvalid({"prog"}, {"--nnodes", "abc", "(from PET_NNODES=abc)"}, {{"PET_NNODES", "abc"}});
  // The command line's own value is not traced to a variable it overrode.
  Error error = parseError({"--nnodes", "xyz", "prog"}, {{"PET_NNODES", "2"}});
  CHECK_THAT(error.what(), !Contains("PET_NNODES"));
}

TEST_CASE("flag --auto-select-gpus, and where it has nothing to choose", "[command_line][auto_select_gpus]") {
  CHECK_FALSE(parseConfig({"--devices", "2", "p"}).autoSelectGpus);
  CHECK(parseConfig({"--devices", "2", "--auto-select-gpus", "p"}).autoSelectGpus);
  CHECK(parseConfig({"--auto_select_gpus", "--nproc-per-node", "gpu", "p"}).autoSelectGpus);
  CHECK(parseConfig({"p"}, {{"PET_AUTO_SELECT_GPUS", "1"}}).autoSelectGpus);
  CHECK(parseConfig({"--hosts", "a:2,b:2", "--auto-select-gpus", "p"}).autoSelectGpus);
  requireInvalid({"--devices", "1,3", "--auto-select-gpus", "p"},
                 {"--devices '1,3' names its GPUs", "nothing to choose"});
  requireInvalid({"--devices", "0", "--auto-select-gpus", "p"}, {"'0' selects no GPU"});
  requireInvalid({"--nproc-per-node", "cpu", "--auto-select-gpus", "p"}, {"--nproc-per-node cpu"});
  requireInvalid({"--hosts", "a:2,b:2", "--include", "b:1", "--auto-select-gpus", "p"},
                 {"--include 'b:1' names host b's GPUs", "nothing to choose"});
}

TEST_CASE("auto-select-gpus in the site file applies to jobs that ask for GPUs by number",
          "[command_line][site_config][auto_select_gpus]") {
  const std::string site = "auto-select-gpus = true\n";
  CHECK(parseWithSite({"--devices", "2", "p"}, site).autoSelectGpus);
  CHECK(parseWithSite({"--devices", "-1", "p"}, site).autoSelectGpus);
  CHECK(parseWithSite({"--nproc-per-node", "gpu", "p"}, site).autoSelectGpus);
  // Named GPUs, no GPU, a worker count: the job runs as without the file, never refused.
  CHECK_FALSE(parseWithSite({"--devices", "1, 3", "p"}, site).autoSelectGpus);
  CHECK_FALSE(parseWithSite({"--devices", "0", "p"}, site).autoSelectGpus);
  CHECK_FALSE(parseWithSite({"p"}, site).autoSelectGpus);
  CHECK_FALSE(parseWithSite({"--nproc-per-node", "4", "p"}, site).autoSelectGpus);
  CHECK_FALSE(parseWithSite({"--hosts", "a:2,b:2", "--include", "b:1", "--devices", "2", "p"}, site).autoSelectGpus);
  // On the command line it is the job's own request: refused where there is nothing to choose.
  CHECK(parseWithSite({"--auto-select-gpus", "--nproc-per-node", "4", "p"}, site).autoSelectGpus);
  CHECK_FALSE(parseWithSite({"--devices", "2", "p"}, "auto-select-gpus = false\n").autoSelectGpus);
}

TEST_CASE("flag --preload: Python modules for Python programs only, a site default only where it applies",
          "[command_line][preload]") {
  CHECK(parseConfig({"--preload", "torch, numpy", "train.py"}).preload == std::vector<std::string>{"torch", "numpy"});
  CHECK(parseConfig({"--preload", "torch", "-m", "pkg.train"}).preload == std::vector<std::string>{"torch"});
  CHECK(parseConfig({"--preload", "torch", "--run-path", "train"}).preload == std::vector<std::string>{"torch"});
  CHECK(parseConfig({"train.py"}).preload.empty());
  requireInvalid({"--preload", "torch", "./trainer"}, {"--preload needs a Python program", "'./trainer'"});
  requireInvalid({"--preload", "torch", "--no-python", "train.py"}, {"--preload needs a Python program"});
  requireInvalid({"--preload", "torch,", "train.py"}, {"'' is not a Python module name"});
  CHECK(parseWithSite({"train.py"}, "preload = \"torch\"\n").preload == std::vector<std::string>{"torch"});
  CHECK(parseWithSite({"./trainer"}, "preload = \"torch\"\n").preload.empty());  // a default, not a refusal
}

TEST_CASE("flag --max-node-blames: 2 by default, 0 never excludes, a site key like the others", "[command_line]") {
  CHECK(parseConfig({"p"}).maxNodeBlames == 2);
  CHECK(parseConfig({"--max-node-blames", "5", "p"}).maxNodeBlames == 5);
  CHECK(parseConfig({"--max_node_blames=0", "p"}).maxNodeBlames == 0);
  for (const std::string value : {"-1", "x", "1.5"}) {
    requireInvalid({"--max-node-blames", value, "p"}, {"--max-node-blames", "'" + value + "'"});
  }
  CHECK(parseWithSite({"train.py"}, "max-node-blames = 3\n").maxNodeBlames == 3);
  CHECK(parseWithSite({"--max-node-blames", "1", "train.py"}, "max_node_blames = 0\n").maxNodeBlames == 1);
}

TEST_CASE("site defaults: max-no-progress-restarts is a key like the other flags", "[command_line]") {
  CHECK(parseWithSite({"train.py"}, "max-no-progress-restarts = 1\n").maxNoProgressRestarts == 1);
  CHECK(parseWithSite({"--max-no-progress-restarts", "4", "train.py"}, "max_no_progress_restarts = 0\n")
            .maxNoProgressRestarts == 4);
}

TEST_CASE("metrics flag: ADDR:PORT, or PORT alone on loopback, from the flag, PET_METRICS or the site key",
          "[command_line][metrics]") {
  using pltrun::Endpoint;
  CHECK_FALSE(parseConfig({"p"}).metrics);  // off by default
  CHECK(parseConfig({"--metrics", "9400", "p"}).metrics == Endpoint{"127.0.0.1", 9400});
  CHECK(parseConfig({"--metrics", ":0", "p"}).metrics == Endpoint{"127.0.0.1", 0});
  CHECK(parseConfig({"--metrics=0.0.0.0:9400", "p"}).metrics == Endpoint{"0.0.0.0", 9400});
  CHECK(parseConfig({"--metrics", "[::1]:0", "p"}).metrics == Endpoint{"::1", 0});
  CHECK(parseConfig({"--metrics", "node-7.example.org:65535", "p"}).metrics == Endpoint{"node-7.example.org", 65535});
  CHECK(parseConfig({"p"}, {{"PET_METRICS", "127.0.0.2:0"}}).metrics == Endpoint{"127.0.0.2", 0});
  CHECK(parseConfig({"--metrics", "9", "p"}, {{"PET_METRICS", "8"}}).metrics == Endpoint{"127.0.0.1", 9});
  CHECK(parseWithSite({"p"}, "metrics = \"127.0.0.1:0\"\n").metrics == Endpoint{"127.0.0.1", 0});
  CHECK(parseWithSite({"p"}, "metrics = 9400\n").metrics == Endpoint{"127.0.0.1", 9400});
}

TEST_CASE("metrics flag: a bad --metrics value is one line saying what to write", "[command_line][metrics]") {
  for (const std::string value : {"", " ", "65536", ":70000", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1", "::1",
                                  "[::1]", "127.0.0.1:", ":", "host name:1", "[::1:9400", "x:y", "a:1:b"}) {
    INFO(value);
    const Error error = parseError({"--metrics", value, "p"});
    CHECK(error.code() == ErrorCode::InvalidArgument);
    const std::string message = error.what();
    CHECK_THAT(message, Contains("--metrics: '" + value + "' is not valid") && Contains("ADDR:PORT"));
    CHECK(message.find('\n') == std::string::npos);
  }
  CHECK_THAT(parseError({"--metrics", "127.0.0.1", "p"}).what(), Contains("the port is missing"));
  CHECK_THAT(parseError({"--metrics", "99999", "p"}).what(), Contains("above 65535"));
  CHECK_THAT(parseError({"p"}, {{"PET_METRICS", "nope"}}).what(), Contains("PET_METRICS=nope"));
  CHECK_THAT(siteError({"p"}, "metrics = \"1.2.3.4\"\n"), Contains("/etc/pltrun.toml") && Contains("--metrics"));
}
