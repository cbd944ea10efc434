// Slurm: the hostlist grammar against examples of what Slurm prints, the variables srun sets,
// and the flags they stand in for.

#include "launcher/command_line/slurm.h"

#include <array>
#include <catch2/catch.hpp>

#include "launcher/command_line/command_line.h"
#include "launcher/plan/slurm_signals.h"
#include "pltrun/error.h"

using namespace pltrun;

namespace {

using Hosts = std::vector<std::string>;

// `env`: the environment srun gave the task. No file exists (so no slurm.conf either).
LaunchConfig parse(std::vector<const char*> args, const Environment& env) {
  args.insert(args.begin(), "pltrun");
  auto noFiles = [](const std::string& path) -> std::string {
    throw FileReadError(FileReadError::Reason::Missing, path + ": no such file");
  };
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

// What srun 22.05 gives a task of `srun -N3 --ntasks-per-node=1` in a job of 3 nodes.
Environment srunTask(const std::string& nodeId) {
  return {{"SLURM_JOB_ID", "777"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_NNODES", "3"},
          {"SLURM_NODEID", nodeId},
          {"SLURM_JOB_NODELIST", "gpu[07-09]"},
          {"SLURM_NODELIST", "gpu[07-09]"},
          {"SLURM_STEP_NUM_NODES", "3"},
          {"SLURM_STEP_NODELIST", "gpu[07-09]"},
          {"SLURM_STEP_NUM_TASKS", "3"},
          {"SLURM_LOCALID", "0"}};
}

TEST_CASE("srun's variables place the task, and without SLURM_JOB_ID there is no Slurm", "[slurm]") {
  std::optional<SlurmJob> job = detectSlurm(srunTask("2"));
  REQUIRE(job);
  CHECK(job->inStep());
  CHECK(job->nnodes == 3);
  CHECK(job->nodeRank == 2);
  CHECK(job->hosts == Hosts{"gpu07", "gpu08", "gpu09"});
  CHECK(job->port == 10777);
  CHECK(slurmMisuse(*job).empty());
  CHECK(job->describe() ==
        "Slurm job 777 (step 0): 3 nodes (first gpu07), this is node 2; rendezvous at "
        "gpu07:10777, run id 777");
  CHECK_FALSE(detectSlurm({}));

  Environment older = {{"SLURM_JOBID", "5"},
                       {"SLURM_STEPID", "1"},
                       {"SLURM_NNODES", "2"},
                       {"SLURM_NODEID", "0"},
                       {"SLURM_NODELIST", "a,b"}};
  REQUIRE(detectSlurm(older));
  CHECK(detectSlurm(older)->hosts == Hosts{"a", "b"});

  Environment mismatch = srunTask("0");
  mismatch["SLURM_STEP_NODELIST"] = "n[1-2]";
  CHECK_THROWS_WITH(detectSlurm(mismatch), Catch::Contains("3 nodes but its node list 'n[1-2]' names 2"));
  CHECK_THROWS_WITH(detectSlurm(srunTask("3")), Catch::Contains("SLURM_NODEID=3"));
}

TEST_CASE("a step on part of the allocation is read from the step's variables, not the job's", "[slurm]") {
  // salloc -N2 srun -N1 -w node2: SLURM_NODELIST and SLURM_JOB_NODELIST name the job's nodes.
  Environment env = {{"SLURM_JOB_ID", "3"},           {"SLURM_STEP_ID", "0"},
                     {"SLURM_NNODES", "1"},           {"SLURM_JOB_NUM_NODES", "2"},
                     {"SLURM_NODEID", "0"},           {"SLURM_JOB_NODELIST", "node[1-2]"},
                     {"SLURM_NODELIST", "node[1-2]"}, {"SLURM_STEP_NODELIST", "node2"},
                     {"SLURM_STEP_NUM_NODES", "1"},   {"SLURM_STEP_NUM_TASKS", "1"}};
  std::optional<SlurmJob> job = detectSlurm(env);
  REQUIRE(job);
  CHECK(job->nnodes == 1);
  CHECK(job->hosts == Hosts{"node2"});
  CHECK(job->describe() == "Slurm job 3 (step 0): 1 node (node2), run id 3");
}

TEST_CASE("a batch script or salloc's shell is not a step: one node runs, more are refused", "[slurm]") {
  Environment batch = {{"SLURM_JOB_ID", "8"},
                       {"SLURM_NNODES", "2"},
                       {"SLURM_JOB_NUM_NODES", "2"},
                       {"SLURM_NODEID", "0"},
                       {"SLURM_JOB_NODELIST", "node[1-2]"},
                       {"SLURM_TASKS_PER_NODE", "2(x2)"}};
  std::optional<SlurmJob> job = detectSlurm(batch);
  REQUIRE(job);
  CHECK_FALSE(job->inStep());
  CHECK(job->nnodes == 2);
  CHECK_THAT(slurmMisuse(*job), Catch::Contains("started by its batch script, not by srun") &&
                                    Catch::Contains("srun --ntasks-per-node=1 pltrun"));
  CHECK_THROWS_WITH(parse({"train.py"}, batch), Catch::Contains("not by srun"));
  CHECK(parse({"--nnodes", "1", "train.py"}, batch).nnodes == 1);  // a node flag: Slurm left alone

  // Slurm's own numbers for the batch, extern and interactive steps are not srun steps.
  for (const char* special : {"4294967291", "4294967292", "4294967290", "batch"}) {
    batch["SLURM_STEP_ID"] = special;
    CHECK_FALSE(detectSlurm(batch)->inStep());
  }
  batch.erase("SLURM_STEP_ID");
  batch["SLURM_NNODES"] = batch["SLURM_JOB_NUM_NODES"] = "1";
  batch["SLURM_JOB_NODELIST"] = "node1";
  LaunchConfig single = parse({"train.py"}, batch);
  CHECK(single.nnodes == 1);
  CHECK(single.runId == "8");
  CHECK(single.slurmSummary == std::optional<std::string>("Slurm job 8 (batch script): 1 node (node1), run id 8"));
}

TEST_CASE("several tasks per node are refused with the srun line to use", "[slurm]") {
  Environment env = srunTask("1");
  env["SLURM_STEP_NUM_TASKS"] = "6";
  env["SLURM_LOCALID"] = "1";
  CHECK_THROWS_WITH(parse({"train.py"}, env), Catch::Contains("srun started 6 tasks on 3 nodes (2 per node)") &&
                                                  Catch::Contains("srun --ntasks-per-node=1 pltrun"));
  env["SLURM_STEP_NUM_TASKS"] = "4";
  CHECK_THROWS_WITH(parse({"train.py"}, env), Catch::Contains("(uneven)"));
  env["SLURM_STEP_NUM_TASKS"] = "3";  // as many tasks as nodes, but this one is a second on its node
  CHECK_THROWS_WITH(parse({"train.py"}, env), Catch::Contains("one task per node"));
}

TEST_CASE("under srun the node flags come from Slurm unless given", "[slurm]") {
  Environment env = srunTask("1");
  env["SLURM_JOB_ID"] = "4242";
  env["SLURM_NNODES"] = env["SLURM_STEP_NUM_NODES"] = env["SLURM_STEP_NUM_TASKS"] = "2";
  env["SLURM_STEP_NODELIST"] = "node[01-02]";

  LaunchConfig config = parse({"--nproc-per-node", "4", "train.py"}, env);
  CHECK(config.rdzv.backend == RendezvousBackend::C10d);
  CHECK(config.rdzv.minNodes == 2);
  CHECK(config.rdzv.maxNodes == 2);
  CHECK(config.rdzv.endpointHost == "node01");
  CHECK(config.rdzv.endpointPort == 14242);
  CHECK(config.rdzv.nodeRankHint == std::optional<int>(1));
  CHECK(config.rdzv.isHost == std::optional<bool>(false));
  CHECK(config.runId == "4242");
  CHECK(config.rdzv.expectedHosts == std::vector<std::string>{"node01", "node02"});
  CHECK(config.rdzv.nodeName == "node02");
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
  SECTION("expected_hosts and node_name in --rdzv-conf win over Slurm's names") {
    LaunchConfig named = parse({"--rdzv-conf", "expected_hosts=a,b,node_name=b", "train.py"}, env);
    CHECK(named.rdzv.expectedHosts == std::vector<std::string>{"a", "b"});
    CHECK(named.rdzv.nodeName == "b");
  }
  SECTION("--rdzv-id wins over the job id") { CHECK(parse({"--rdzv-id", "mine", "train.py"}, env).runId == "mine"); }
  SECTION("a pltrun started by a worker leaves the outer job's variables alone") {
    env["TORCHELASTIC_RUN_ID"] = "4242";
    LaunchConfig nested = parse({"train.py"}, env);
    CHECK(nested.nnodes == 1);
    CHECK_FALSE(nested.slurmSummary);
  }
  SECTION("a one-node step is a single-node run with the job id as run id") {
    env["SLURM_STEP_NUM_NODES"] = env["SLURM_STEP_NUM_TASKS"] = "1";
    env["SLURM_STEP_NODELIST"] = "node01";
    env["SLURM_NODEID"] = "0";
    LaunchConfig single = parse({"train.py"}, env);
    CHECK(single.nnodes == 1);
    CHECK(single.runId == "4242");
    CHECK(single.slurmSummary == std::optional<std::string>("Slurm job 4242 (step 0): 1 node (node01), run id 4242"));
  }
}

TEST_CASE("ProctrackType says whom Slurm's own signals reach", "[slurm]") {
  CHECK(proctrackTypeIn("ClusterName=c\nProctrackType=proctrack/linuxproc\n") == "proctrack/linuxproc");
  CHECK(proctrackTypeIn("  proctracktype = proctrack/pgid  # comment\n") == "proctrack/pgid");
  CHECK(proctrackTypeIn("#ProctrackType=proctrack/pgid\nProctrackType=proctrack/cgroup\n") == "proctrack/cgroup");
  CHECK_FALSE(proctrackTypeIn("ClusterName=c\n"));

  CHECK(signalReachOf(std::string("proctrack/pgid")) == SlurmSignalReach::TaskGroup);
  CHECK(signalReachOf(std::string("proctrack/linuxproc")) == SlurmSignalReach::Descendants);
  CHECK(signalReachOf(std::string("proctrack/cgroup")) == SlurmSignalReach::TaskCgroups);
  CHECK(signalReachOf(std::nullopt) == SlurmSignalReach::TaskCgroups);  // Slurm's default
  CHECK(signalReachOf(std::string("proctrack/unknown")) == SlurmSignalReach::TaskGroup);

  CHECK_FALSE(slurmSignalsReachWorkers(SlurmSignalReach::TaskGroup, false));
  CHECK(slurmSignalsReachWorkers(SlurmSignalReach::Descendants, true));
  CHECK(slurmSignalsReachWorkers(SlurmSignalReach::TaskCgroups, false));
  // Workers moved into pltrun's job cgroup are below the task's cgroup, where Slurm does not look.
  CHECK_FALSE(slurmSignalsReachWorkers(SlurmSignalReach::TaskCgroups, true));
}

TEST_CASE("under srun, slurm.conf is read from SLURM_CONF, and a missing one means forwarding", "[slurm]") {
  std::vector<std::string> read;
  FileReader reader = [&read](const std::string& path) -> std::string {
    if (path == "/etc/pltrun.toml") throw FileReadError(FileReadError::Reason::Missing, "no site config");
    read.push_back(path);
    if (path == "/etc/slurm/slurm.conf") throw FileReadError(FileReadError::Reason::Missing, "missing");
    return "ProctrackType=proctrack/linuxproc\n";
  };
  CHECK(readSlurmSignalReach({{"SLURM_CONF", "/tmp/c/slurm.conf"}}, reader) == SlurmSignalReach::Descendants);
  CHECK(readSlurmSignalReach({}, reader) == SlurmSignalReach::TaskGroup);
  // Not set in the file but maybe in an included one: not known, so forwarded.
  FileReader including = [](const std::string&) -> std::string { return "Include /etc/slurm/site.conf\n"; };
  CHECK(readSlurmSignalReach({{"SLURM_CONF", "/c"}}, including) == SlurmSignalReach::TaskGroup);
  FileReader plain = [](const std::string&) -> std::string { return "ClusterName=c\n"; };
  CHECK(readSlurmSignalReach({{"SLURM_CONF", "/c"}}, plain) == SlurmSignalReach::TaskCgroups);
  CHECK(read == std::vector<std::string>{"/tmp/c/slurm.conf", "/etc/slurm/slurm.conf"});

  Environment env = srunTask("0");
  env["SLURM_CONF"] = "/tmp/c/slurm.conf";
  std::array<const char*, 2> args{"pltrun", "train.py"};
  auto parsed = parseCommandLine(static_cast<int>(args.size()), args.data(), env, reader);
  CHECK(std::get<LaunchConfig>(parsed).slurmSignalReach == SlurmSignalReach::Descendants);
}

TEST_CASE("a hostlist is capped at 100000 names in all, not per bracket", "[slurm][bounded]") {
  // Before: n[0-99999][0-99999] was 1e10 names (std::bad_alloc); each bracket was under its cap.
  for (const char* huge : {"n[0-99999][0-99999]", "a[0-60000],b[0-60000]", "n[0-99999,0-99999]", "n[0-100000]"}) {
    INFO(huge);
    try {
      expandHostlist(huge);
      FAIL("accepted");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::InvalidArgument);
      CHECK_THAT(error.what(), Catch::Contains("expands to more than 100000 host names"));
    }
  }
  CHECK(expandHostlist("n[0-99999]").size() == 100000);
  CHECK(expandHostlist("n[0-9][0-9999]").size() == 100000);
}
