// Slurm: the hostlist grammar against examples of what Slurm prints, the variables srun sets,
// and the flags they stand in for.

#include "launcher/plan/slurm.h"

#include <catch2/catch.hpp>

#include "launcher/plan/command_line.h"
#include "pltrun/error.h"

using namespace pltrun;

namespace {

using Hosts = std::vector<std::string>;

// `env`: the environment srun gave the task. No test here reads a file.
LaunchConfig parse(std::vector<const char*> args, const Environment& env) {
  args.insert(args.begin(), "pltrun");
  auto noFiles = [](const std::string&) -> std::string { throw std::logic_error("no file is read here"); };
  auto parsed = parseCommandLine(static_cast<int>(args.size()), args.data(), env, noFiles);
  return std::get<LaunchConfig>(parsed);
}

}  // namespace

TEST_CASE("Slurm hostlists expand as Slurm expands them", "[slurm]") {
  CHECK(expandHostlist("node01") == Hosts{"node01"});
  CHECK(expandHostlist("node[01-04,07]") == Hosts{"node01", "node02", "node03", "node04", "node07"});
  CHECK(expandHostlist("node[01-04,07],gpu-a[1-2]") ==
        Hosts{"node01", "node02", "node03", "node04", "node07", "gpu-a1", "gpu-a2"});
  CHECK(expandHostlist("node[009-011]") == Hosts{"node009", "node010", "node011"});
  CHECK(expandHostlist("r[1-2]-n[01-02]") == Hosts{"r1-n01", "r1-n02", "r2-n01", "r2-n02"});
  CHECK(expandHostlist("a,b,c[5]") == Hosts{"a", "b", "c5"});
  CHECK(expandHostlist("tux[0-2]x") == Hosts{"tux0x", "tux1x", "tux2x"});
  CHECK(expandHostlist("127.0.0.[1-2]") == Hosts{"127.0.0.1", "127.0.0.2"});
  CHECK(expandHostlist(" cn[8-10] ") == Hosts{"cn8", "cn9", "cn10"});
}

TEST_CASE("malformed hostlists are one-line errors that quote the list", "[slurm]") {
  for (const char* bad :
       {"", "node[", "node]", "node[3-1]", "node[a-b]", "node[1-2", "node[]", "node[1-2-3]", "a,,b", "node[1,]"}) {
    INFO(bad);
    try {
      expandHostlist(bad);
      FAIL("accepted");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::InvalidArgument);
      CHECK_THAT(error.what(), Catch::StartsWith("Slurm node list"));
    }
  }
}

TEST_CASE("the rendezvous port comes from the job id, with a fallback", "[slurm]") {
  CHECK(slurmRendezvousPort("4242") == 14242);
  CHECK(slurmRendezvousPort("123456") == 10000 + 123456 % 50000);
  CHECK(slurmRendezvousPort("abc") == 29400);
  CHECK(slurmRendezvousPort("") == 29400);
}

TEST_CASE("srun's variables are read, anything missing means no Slurm", "[slurm]") {
  Environment env = {
      {"SLURM_JOB_ID", "777"}, {"SLURM_NNODES", "3"}, {"SLURM_NODEID", "2"}, {"SLURM_JOB_NODELIST", "gpu[07-09]"}};
  std::optional<SlurmJob> job = detectSlurm(env);
  REQUIRE(job);
  CHECK(job->nnodes == 3);
  CHECK(job->nodeRank == 2);
  CHECK(job->hosts == Hosts{"gpu07", "gpu08", "gpu09"});
  CHECK(job->port == 10777);
  CHECK_THAT(job->describe(), Catch::Contains("Slurm job 777: 3 nodes") && Catch::Contains("gpu07:10777"));

  Environment older = {
      {"SLURM_JOBID", "5"}, {"SLURM_JOB_NUM_NODES", "2"}, {"SLURM_NODEID", "0"}, {"SLURM_NODELIST", "a,b"}};
  REQUIRE(detectSlurm(older));
  env.erase("SLURM_NODEID");  // salloc's shell, not an srun task
  CHECK_FALSE(detectSlurm(env));
  CHECK_FALSE(detectSlurm({}));

  Environment mismatch = {
      {"SLURM_JOB_ID", "1"}, {"SLURM_NNODES", "3"}, {"SLURM_NODEID", "0"}, {"SLURM_JOB_NODELIST", "n[1-2]"}};
  CHECK_THROWS_WITH(detectSlurm(mismatch), Catch::Contains("3 nodes but its node list 'n[1-2]' names 2"));
  Environment outOfRange = {
      {"SLURM_JOB_ID", "1"}, {"SLURM_NNODES", "2"}, {"SLURM_NODEID", "2"}, {"SLURM_JOB_NODELIST", "n[1-2]"}};
  CHECK_THROWS_WITH(detectSlurm(outOfRange), Catch::Contains("SLURM_NODEID=2"));
}

TEST_CASE("under srun the node flags come from Slurm unless given", "[slurm]") {
  Environment env = {
      {"SLURM_JOB_ID", "4242"}, {"SLURM_NNODES", "2"}, {"SLURM_NODEID", "1"}, {"SLURM_JOB_NODELIST", "node[01-02]"}};

  LaunchConfig config = parse({"--nproc-per-node", "4", "train.py"}, env);
  CHECK(config.rdzv.backend == RendezvousBackend::C10d);
  CHECK(config.rdzv.minNodes == 2);
  CHECK(config.rdzv.maxNodes == 2);
  CHECK(config.rdzv.endpointHost == "node01");
  CHECK(config.rdzv.endpointPort == 14242);
  CHECK(config.rdzv.nodeRankHint == std::optional<int>(1));
  CHECK(config.rdzv.isHost == std::optional<bool>(false));
  CHECK(config.runId == "4242");
  REQUIRE(config.slurmSummary);

  SECTION("the first node hosts the store") {
    env["SLURM_NODEID"] = "0";
    CHECK(parse({"train.py"}, env).rdzv.isHost == std::optional<bool>(true));
  }
  SECTION("explicit flags win, and Slurm is then left alone") {
    LaunchConfig given = parse({"--nnodes", "2", "--rdzv-endpoint", "10.0.0.9:1234", "train.py"}, env);
    CHECK(given.rdzv.endpointHost == "10.0.0.9");
    CHECK_FALSE(given.slurmSummary);
    CHECK_FALSE(parse({"--standalone", "train.py"}, env).slurmSummary);
  }
  SECTION("--rdzv-id wins over the job id") { CHECK(parse({"--rdzv-id", "mine", "train.py"}, env).runId == "mine"); }
  SECTION("a one-node allocation is a single-node run") {
    env["SLURM_NNODES"] = "1";
    env["SLURM_JOB_NODELIST"] = "node01";
    env["SLURM_NODEID"] = "0";
    LaunchConfig single = parse({"train.py"}, env);
    CHECK(single.nnodes == 1);
    CHECK_FALSE(single.slurmSummary);
  }
}
