// pltrun under a real two-node Slurm 22.05 cluster (helpers/slurm_cluster.h): srun, salloc,
// sbatch and scancel as users run them, against real slurmctld and slurmd daemons. Each
// test starts its own cluster and skips, with the reason, only where the
// daemons cannot run here (not root, Slurm or munge not installed).

#include "helpers/slurm_cluster.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/worker_env_file.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

bool clusterPossible() {
  std::string why;
  if (SlurmCluster::available(&why)) return true;
  WARN("skipped: " << why);
  return false;
}

// The job id pltrun printed ("Slurm job N (step 0): ..."); empty if none.
std::string jobIdIn(const std::string& output) {
  std::smatch match;
  if (std::regex_search(output, match, std::regex("Slurm job ([0-9]+) \\("))) return match[1];
  return "";
}

std::string makeDirectory(const SlurmCluster& cluster, const std::string& name) {
  const std::string path = cluster.directory() / name;
  ::mkdir(path.c_str(), 0755);
  return path;
}

// An executable batch script in the cluster's directory.
std::string batchScript(const SlurmCluster& cluster, const std::string& body) {
  const std::string path = cluster.directory() / "job.sh";
  {
    std::ofstream file(path);
    file << "#!/bin/sh\n" << body << "\n";
  }
  ::chmod(path.c_str(), 0755);
  return path;
}

std::vector<std::string> onEveryNode(const std::vector<std::string>& pltrunArgs) {
  std::vector<std::string> command = {"srun", "-N2", "--ntasks-per-node=1"};
  for (const auto& arg : pltrunCommand(pltrunArgs)) command.push_back(arg);
  return command;
}

// The id of the one job in the queue, once there is one (10 s at most).
std::string runningJobId(const SlurmCluster& cluster) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string id = cluster.run({"squeue", "-h", "-o", "%i"}, 10s).out;
    if (!id.empty()) return id.substr(0, id.find('\n'));
    std::this_thread::sleep_for(100ms);
  }
  return "";
}

}  // namespace

TEST_CASE("real Slurm: srun -N2 --ntasks-per-node=1 pltrun places 4 ranks over both nodes", "[slurm-cluster]") {
  if (!clusterPossible()) return;
  SlurmCluster cluster;
  const std::string out = makeDirectory(cluster, "env");
  Finished run = cluster.run(onEveryNode({"--nproc-per-node", "2", testWorker(), "env", out}), 90s);
  INFO(run.err << cluster.logs());
  REQUIRE(run.status == 0);
  const std::string jobId = jobIdIn(run.err);
  REQUIRE_FALSE(jobId.empty());
  CHECK_THAT(run.err, Catch::Contains("Slurm job " + jobId + " (step 0): 2 nodes (first node1), this is node 0"));
  CHECK_THAT(run.err, Catch::Contains("this is node 1"));
  for (int rank = 0; rank < 4; ++rank) {
    json env = workerEnvironment(out, rank);
    CHECK(env["WORLD_SIZE"] == "4");
    CHECK(env["GROUP_RANK"] == std::to_string(rank / 2));
    CHECK(env["LOCAL_RANK"] == std::to_string(rank % 2));
    CHECK(env["MASTER_ADDR"] == SlurmCluster::nodeAddress(0));  // the first node's address
    CHECK(env["TORCHELASTIC_RUN_ID"] == jobId);
  }
}

TEST_CASE("real Slurm: a failing rank's exit code comes back through srun", "[slurm-cluster]") {
  if (!clusterPossible()) return;
  SlurmCluster cluster;
  for (auto [code, rank] : {std::pair{7, 3}, std::pair{5, 0}}) {
    Finished run = cluster.run(
        onEveryNode({"--nproc-per-node", "2", testWorker(), "exit", std::to_string(code), std::to_string(rank)}), 90s);
    INFO(run.err << cluster.logs());
    CHECK(run.status == code);
    CHECK_THAT(run.err, Catch::Contains("rank " + std::to_string(rank)));
  }
}

TEST_CASE("real Slurm: a one-node step in a two-node allocation runs on its node", "[slurm-cluster]") {
  if (!clusterPossible()) return;
  SlurmCluster cluster;
  const std::string out = makeDirectory(cluster, "env");
  std::vector<std::string> command = {"salloc", "-N2", "srun", "-N1", "-w", "node2"};
  for (const auto& arg : pltrunCommand({"--nproc-per-node", "2", testWorker(), "env", out})) command.push_back(arg);
  Finished run = cluster.run(command, 90s);
  INFO(run.err << cluster.logs());
  REQUIRE(run.status == 0);
  const std::string jobId = jobIdIn(run.err);
  CHECK_THAT(run.err, Catch::Contains("Slurm job " + jobId + " (step 0): 1 node (node2), run id " + jobId));
  for (int rank = 0; rank < 2; ++rank) {
    json env = workerEnvironment(out, rank);
    CHECK(env["WORLD_SIZE"] == "2");
    CHECK(env["TORCHELASTIC_RUN_ID"] == jobId);
  }
}

TEST_CASE("real Slurm: srun -N1 pltrun takes the job id as run id", "[slurm-cluster]") {
  if (!clusterPossible()) return;
  SlurmCluster cluster;
  const std::string out = makeDirectory(cluster, "env");
  std::vector<std::string> command = {"srun", "-N1"};
  for (const auto& arg : pltrunCommand({"--nproc-per-node", "2", testWorker(), "env", out})) command.push_back(arg);
  Finished run = cluster.run(command, 90s);
  INFO(run.err << cluster.logs());
  REQUIRE(run.status == 0);
  const std::string jobId = jobIdIn(run.err);
  REQUIRE_FALSE(jobId.empty());
  CHECK(workerEnvironment(out, 0)["TORCHELASTIC_RUN_ID"] == jobId);
  CHECK(workerEnvironment(out, 1)["TORCHELASTIC_RUN_ID"] == jobId);
}

TEST_CASE("real Slurm: srun --ntasks-per-node=2 pltrun is refused at once with what to run instead",
          "[slurm-cluster]") {
  if (!clusterPossible()) return;
  SlurmCluster cluster;
  std::vector<std::string> command = {"srun", "-N2", "--ntasks-per-node=2"};
  for (const auto& arg : pltrunCommand({"--nproc-per-node", "2", testWorker(), "exit", "0"})) command.push_back(arg);
  Finished run = cluster.run(command, 90s);
  INFO(run.err << cluster.logs());
  CHECK(run.status == 2);
  CHECK_THAT(run.err, Catch::Contains("srun started 4 tasks on 2 nodes (2 per node)") &&
                          Catch::Contains("srun --ntasks-per-node=1 pltrun"));
}

TEST_CASE("real Slurm: pltrun in a batch script without srun runs a one-node job and refuses a two-node one",
          "[slurm-cluster]") {
  if (!clusterPossible()) return;
  SlurmCluster cluster;
  const std::string out = makeDirectory(cluster, "env");
  std::string pltrunLine;
  for (const auto& arg : pltrunCommand({"--nproc-per-node", "2", testWorker(), "env", out})) pltrunLine += arg + " ";
  const std::string script = batchScript(cluster, pltrunLine);
  const std::string log = cluster.directory() / "batch.out";

  Finished twoNodes = cluster.run({"sbatch", "-N2", "--wait", "-o", log, script}, 90s);
  INFO(readFile(log) << cluster.logs());
  CHECK(twoNodes.status == 2);
  CHECK_THAT(readFile(log), Catch::Contains("was started by its batch script, not by srun") &&
                                Catch::Contains("srun --ntasks-per-node=1 pltrun"));

  Finished oneNode = cluster.run({"sbatch", "-N1", "--wait", "-o", log, script}, 90s);
  CHECK(oneNode.status == 0);
  const std::string jobId = jobIdIn(readFile(log));
  CHECK_THAT(readFile(log), Catch::Contains("(batch script): 1 node (node1), run id " + jobId));
  CHECK(workerEnvironment(out, 1)["TORCHELASTIC_RUN_ID"] == jobId);
}

TEST_CASE("real Slurm: an sbatch script's srun step restarts a failed worker and succeeds", "[slurm-cluster]") {
  if (!clusterPossible()) return;
  SlurmCluster cluster;
  const std::string out = makeDirectory(cluster, "attempts");
  std::string line = "srun --ntasks-per-node=1";
  for (const auto& arg :
       pltrunCommand({"--nproc-per-node", "2", "--max-restarts", "1", testWorker(), "fail-first-attempt", out, "3"})) {
    line += " " + arg;
  }
  const std::string log = cluster.directory() / "batch.out";
  Finished run = cluster.run({"sbatch", "-N2", "--wait", "-o", log, batchScript(cluster, line)}, 120s);
  INFO(readFile(log) << cluster.logs());
  REQUIRE(run.status == 0);
  // Rank 3 failed in attempt 0 (the others may have been stopped before they wrote a line),
  // then every rank ran attempt 1, on both nodes.
  const std::string attempts = readFile(out + "/attempts");
  CHECK_THAT(attempts, Catch::Contains("3 0\n"));
  for (int rank = 0; rank < 4; ++rank) CHECK_THAT(attempts, Catch::Contains(std::to_string(rank) + " 1\n"));
}

TEST_CASE("real Slurm: a node whose pltrun never starts is named by its Slurm name while the others wait",
          "[slurm-cluster]") {
  if (!clusterPossible()) return;
  SlurmCluster cluster;
  // node2's task exits at once instead of starting pltrun, as a broken node's would.
  std::string line = "[ \"$SLURMD_NODENAME\" = node2 ] && exit 0; exec";
  for (const auto& arg : pltrunCommand({"--rdzv-conf", "join_timeout=4", testWorker(), "exit", "0"})) {
    line += " '" + arg + "'";
  }
  Finished run = cluster.run({"srun", "-N2", "--ntasks-per-node=1", "sh", "-c", line}, 90s);
  INFO(run.err << cluster.logs());
  CHECK(run.status != 0);
  CHECK_THAT(run.err,
             Catch::Contains("waiting for nodes: 1/2 joined (1 missing to start), missing: node2; join timeout in"));
  CHECK_THAT(run.err,
             Catch::Contains("1 of at least 2 nodes joined round 0 within 4 s (1 missing; not joined: node2)"));
}

namespace {

// scancel --signal=USR1, as Lightning's requeue and `#SBATCH --signal` use it: each worker's
// handler runs exactly once, whichever processes Slurm signals itself.
void checkUsr1ReachesEachWorkerOnce(const std::string& proctrackType) {
  SlurmCluster cluster({proctrackType});
  const std::string out = makeDirectory(cluster, "signals");
  ChildProcess srun(
      cluster.client(onEveryNode({"--nproc-per-node", "2", "--term-timeout", "5", testWorker(), "signals", out})),
      cluster.environment());
  for (int rank = 0; rank < 4; ++rank) REQUIRE(waitForFile(out + "/ready_" + std::to_string(rank), 60s));
  const std::string jobId = runningJobId(cluster);
  REQUIRE_FALSE(jobId.empty());
  REQUIRE(cluster.run({"scancel", "--signal=USR1", jobId}, 20s).status == 0);
  for (int rank = 0; rank < 4; ++rank) REQUIRE(waitForFile(out + "/usr1_" + std::to_string(rank), 20s));
  // A second delivery (pltrun forwarding what Slurm delivered already) follows within
  // milliseconds; a second is plenty to see it.
  std::this_thread::sleep_for(1s);
  for (int rank = 0; rank < 4; ++rank) CHECK(readFile(out + "/usr1_" + std::to_string(rank)) == "1");

  REQUIRE(cluster.run({"scancel", jobId}, 20s).status == 0);
  Finished end = srun.wait(60s);
  INFO(end.err << cluster.logs());
  CHECK_FALSE(end.timedOut);
  for (int rank = 0; rank < 4; ++rank) CHECK(waitForFile(out + "/term_" + std::to_string(rank), 10s));
}

}  // namespace

TEST_CASE("real Slurm: scancel --signal=USR1 reaches each worker once with proctrack/pgid", "[slurm-cluster]") {
  if (!clusterPossible()) return;
  checkUsr1ReachesEachWorkerOnce("proctrack/pgid");
}

TEST_CASE("real Slurm: scancel --signal=USR1 reaches each worker once with proctrack/linuxproc", "[slurm-cluster]") {
  if (!clusterPossible()) return;
  checkUsr1ReachesEachWorkerOnce("proctrack/linuxproc");
}
