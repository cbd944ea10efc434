// parseCommandLine: torchrun's flags in both spellings, Lightning's --devices, pltrun's own
// flags, PET_* defaults, and the rule that nothing from PROGRAM on is read as a flag.

#include "launcher/command_line.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "pltrun/error.h"
#include "launcher/text_parsing.h"
#include "launcher/worker_layout.h"
#include "scoped_env.h"

using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::InformationRequest;
using pltrun::LaunchConfig;
using pltrun::ProgramKind;
using pltrun_test::ScopedEnv;
using Catch::Matchers::Contains;

namespace {

// `arguments` without argv[0]; "pltrun" is put in front.
std::variant<LaunchConfig, InformationRequest> parse(const std::vector<std::string>& arguments) {
  std::vector<const char*> argv{"pltrun"};
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  return pltrun::parseCommandLine(static_cast<int>(argv.size()), argv.data());
}

LaunchConfig parseConfig(const std::vector<std::string>& arguments) {
  auto result = parse(arguments);
  REQUIRE(std::holds_alternative<LaunchConfig>(result));
  return std::get<LaunchConfig>(result);
}

// The error parseCommandLine throws; fails the test when it throws nothing or something else.
Error parseError(const std::vector<std::string>& arguments) {
  try {
    parse(arguments);
  } catch (const Error& error) {
    return error;
  }
  FAIL("parseCommandLine accepted an invalid command line");
  throw std::logic_error("unreachable");
}

// Requires an InvalidArgument error whose message contains every one of `fragments`.
void requireInvalid(const std::vector<std::string>& arguments, std::initializer_list<std::string> fragments) {
  Error error = parseError(arguments);
  CHECK(error.code() == ErrorCode::InvalidArgument);
  for (const std::string& fragment : fragments) CHECK_THAT(error.what(), Contains(fragment));
}

}  // namespace

TEST_CASE("defaults when only PROGRAM is given", "[command_line]") {
  ScopedEnv noNproc("PET_NPROC_PER_NODE", std::nullopt);
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
}

TEST_CASE("flag --nproc-per-node accepts both spellings and both value forms", "[command_line]") {
  ScopedEnv noNproc("PET_NPROC_PER_NODE", std::nullopt);
  SECTION("--nproc-per-node 4") { CHECK(parseConfig({"--nproc-per-node", "4", "p"}).nprocPerNode == "4"); }
  SECTION("--nproc-per-node=4") { CHECK(parseConfig({"--nproc-per-node=4", "p"}).nprocPerNode == "4"); }
  SECTION("--nproc_per_node 4") { CHECK(parseConfig({"--nproc_per_node", "4", "p"}).nprocPerNode == "4"); }
  SECTION("--nproc_per_node=4") { CHECK(parseConfig({"--nproc_per_node=4", "p"}).nprocPerNode == "4"); }
}

TEST_CASE("flag --nproc-per-node accepts an integer, gpu, cpu and auto", "[command_line]") {
  ScopedEnv noNproc("PET_NPROC_PER_NODE", std::nullopt);
  for (std::string value : {"1", "8", "4096", "gpu", "cpu", "auto"}) {
    INFO("value " << value);
    CHECK(parseConfig({"--nproc-per-node", value, "p"}).nprocPerNode == value);
  }
}

TEST_CASE("flag --nproc-per-node rejects values that are not a positive count or a keyword", "[command_line]") {
  ScopedEnv noNproc("PET_NPROC_PER_NODE", std::nullopt);
  for (std::string value : {"0", "-1", "abc", "4x", "GPU", "1.5", "4097"}) {
    INFO("value " << value);
    requireInvalid({"--nproc-per-node", value, "p"}, {"--nproc-per-node", "'" + value + "'"});
  }
  SECTION("the underscore spelling names the flag too") {
    requireInvalid({"--nproc_per_node=abc", "p"}, {"nproc", "'abc'"});
  }
}

TEST_CASE("an accepted --nproc-per-node count is one the worker layout can read", "[command_line]") {
  // resolveWorkerLayout reads an integer nprocPerNode with parseInteger and dereferences the
  // result without checking ("validated when the command line was parsed"), so every count
  // parseCommandLine accepts must be stored in a form parseInteger reads.
  for (std::string value : {"4", " 4", "4 ", "\t2"}) {
    INFO("value '" << value << "'");
    std::optional<LaunchConfig> config;
    try {
      ScopedEnv noNproc("PET_NPROC_PER_NODE", std::nullopt);
      config = parseConfig({"--nproc-per-node", value, "p"});
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::InvalidArgument);  // rejecting it is fine too
      continue;
    }
    REQUIRE(config->nprocPerNode.has_value());
    auto count = pltrun::parseInteger(*config->nprocPerNode);
    CHECK(count.has_value());
    if (!count) continue;  // resolveWorkerLayout would dereference an empty optional
    CHECK(*count == std::stoll(value));
    CHECK(pltrun::resolveWorkerLayout(config->nprocPerNode, std::nullopt, {}, 1).workerCount == *count);
  }
}

TEST_CASE("PET_NPROC_PER_NODE is the default for --nproc-per-node", "[command_line]") {
  SECTION("used when the flag is absent") {
    ScopedEnv env("PET_NPROC_PER_NODE", std::string("3"));
    CHECK(parseConfig({"p"}).nprocPerNode == "3");
  }
  SECTION("the flag wins over the variable") {
    ScopedEnv env("PET_NPROC_PER_NODE", std::string("3"));
    CHECK(parseConfig({"--nproc-per-node", "5", "p"}).nprocPerNode == "5");
    CHECK(parseConfig({"--nproc_per_node=gpu", "p"}).nprocPerNode == "gpu");
  }
  SECTION("a bad value in the variable is rejected like a bad flag") {
    ScopedEnv env("PET_NPROC_PER_NODE", std::string("zero"));
    requireInvalid({"p"}, {"--nproc-per-node", "'zero'"});
  }
  SECTION("unset variable leaves the value empty") {
    ScopedEnv env("PET_NPROC_PER_NODE", std::nullopt);
    CHECK_FALSE(parseConfig({"p"}).nprocPerNode.has_value());
  }
}

TEST_CASE("PROGRAM and everything after it belong to the program", "[command_line]") {
  ScopedEnv noNproc("PET_NPROC_PER_NODE", std::nullopt);
  SECTION("pltrun flags after PROGRAM are program arguments, kept verbatim") {
    LaunchConfig config = parseConfig({"--nproc-per-node", "2", "prog", "--nproc-per-node", "7", "-m"});
    CHECK(config.nprocPerNode == "2");
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

TEST_CASE("an unknown option before PROGRAM is an error naming it", "[command_line]") {
  requireInvalid({"--bogus", "prog"}, {"--bogus"});
  requireInvalid({"--nproc-per-node", "2", "--frobnicate=1", "prog"}, {"--frobnicate"});
  requireInvalid({"-z", "prog"}, {"-z"});
}

TEST_CASE("flag -m and --no-python choose how PROGRAM is started", "[command_line]") {
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
  SECTION("both together are an error") {
    requireInvalid({"-m", "--no-python", "prog"}, {"-m", "--no-python"});
    requireInvalid({"--no-python", "--module", "prog"}, {"--no-python"});
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
  SECTION("an elastic range is rejected, saying so") {
    requireInvalid({"--nnodes", "1:3", "--master-port", "29500", "p"}, {"--nnodes", "'1:3'", "elastic"});
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

TEST_CASE("flag --devices is kept raw, to be resolved against the GPUs later", "[command_line]") {
  CHECK(parseConfig({"--devices", "1, 3", "p"}).devices == "1, 3");
  CHECK(parseConfig({"--devices=-1", "p"}).devices == "-1");
  CHECK(parseConfig({"--devices", "[0]", "p"}).devices == "[0]");
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

TEST_CASE("flag --rdzv-backend accepts static and c10d only", "[command_line]") {
  CHECK_NOTHROW(parseConfig({"--rdzv-backend", "static", "p"}));
  CHECK_NOTHROW(parseConfig({"--rdzv_backend=c10d", "p"}));
  requireInvalid({"--rdzv-backend", "etcd", "p"}, {"--rdzv-backend", "'etcd'"});
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
}
