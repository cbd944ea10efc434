// `srun --ntasks-per-node=1 pltrun PROGRAM` simulated: two pltrun processes get the
// variables srun gives the tasks of a 2-node step, and no node flag. The node list names two
// loopback addresses ("127.0.0.[1-2]"), so the first "node" is this machine; the job id is
// chosen so that the port derived from it (10000 + id mod 50000) is one the kernel just
// reported free.
//
// The same against a real Slurm cluster (srun, salloc, sbatch, scancel): tests/slurm/.

#include <signal.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "helpers/child_process.h"
#include "helpers/secret_file_fixture.h"
#include "helpers/store_client_options.h"
#include "helpers/temp_dir.h"
#include "helpers/worker_env_file.h"
#include "pltrun/error.h"
#include "pltrun/tcp_store.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// A free loopback port in the range Slurm job ids map to (10000..59999).
int freePortForSlurm() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int port = freeLoopbackPort();
    if (port >= 10000 && port < 60000) return port;
  }
  FAIL("no free port between 10000 and 59999");
  return -1;
}

std::vector<std::string> slurmTask(int jobId, int nodeId) {
  return {"SLURM_JOB_ID=" + std::to_string(jobId),
          "SLURM_STEP_ID=0",
          "SLURM_NNODES=2",
          "SLURM_NODEID=" + std::to_string(nodeId),
          "SLURM_JOB_NODELIST=127.0.0.[1-2]",
          "SLURM_STEP_NODELIST=127.0.0.[1-2]",
          "SLURM_STEP_NUM_NODES=2",
          "SLURM_STEP_NUM_TASKS=2",
          "SLURM_LOCALID=0",
          "SLURM_PROCID=" + std::to_string(nodeId),
          "SLURM_CONF=/nonexistent/slurm.conf"};
}

}  // namespace

TEST_CASE("under srun, pltrun needs no node flag: Slurm's variables place every node", "[slurm][e2e]") {
  TempDir directory;
  const int port = freePortForSlurm();
  const int jobId = port - 10000;
  const std::vector<std::string> args = {"--nproc-per-node", "2", testWorker(), "env", directory.path()};
  ChildProcess first(pltrunCommand(args), slurmTask(jobId, 0));
  ChildProcess second(pltrunCommand(args), slurmTask(jobId, 1));
  Finished firstEnd = first.wait(60s);
  Finished secondEnd = second.wait(60s);
  INFO(firstEnd.err << secondEnd.err);
  REQUIRE(firstEnd.status == 0);
  REQUIRE(secondEnd.status == 0);
  const std::string detected =
      "Slurm job " + std::to_string(jobId) + " (step 0): 2 nodes (first 127.0.0.1), this is node ";
  CHECK_THAT(firstEnd.err, Catch::Contains(detected + "0"));
  CHECK_THAT(secondEnd.err, Catch::Contains(detected + "1"));
  CHECK_THAT(firstEnd.err, Catch::Contains("listening on 127.0.0.1:" + std::to_string(port)));
  std::set<std::string> masterPorts;
  for (int rank = 0; rank < 4; ++rank) {
    json env = workerEnvironment(directory, rank);
    CHECK(env["WORLD_SIZE"] == "4");
    CHECK(env["GROUP_RANK"] == std::to_string(rank / 2));  // node rank = SLURM_NODEID
    CHECK(env["TORCHELASTIC_RUN_ID"] == std::to_string(jobId));
    CHECK(env["MASTER_ADDR"] == "127.0.0.1");
    masterPorts.insert(env["MASTER_PORT"].get<std::string>());
  }
  // The workers' store is node 0's own, apart from the rendezvous port derived from the job.
  CHECK(masterPorts.size() == 1);
  CHECK(masterPorts.count(std::to_string(port)) == 0);
}

TEST_CASE("under srun, Slurm's SIGUSR1 and SIGTERM before preemption reach every worker", "[slurm][e2e]") {
  TempDir directory;
  const int jobId = freePortForSlurm() - 10000;
  const std::vector<std::string> args = {"--nproc-per-node", "2",       "--term-timeout", "5",
                                         testWorker(),       "signals", directory.path()};
  ChildProcess first(pltrunCommand(args), slurmTask(jobId, 0));
  ChildProcess second(pltrunCommand(args), slurmTask(jobId, 1));
  for (int rank = 0; rank < 4; ++rank) REQUIRE(waitForFile(directory / ("ready_" + std::to_string(rank)), 30s));
  // Slurm signals every task of the step (srun --signal=USR1@60, then SIGTERM at the end).
  first.signal(SIGUSR1);
  second.signal(SIGUSR1);
  for (int rank = 0; rank < 4; ++rank) CHECK(waitForFile(directory / ("usr1_" + std::to_string(rank)), 10s));
  first.signal(SIGTERM);
  second.signal(SIGTERM);
  Finished firstEnd = first.wait(30s);
  Finished secondEnd = second.wait(30s);
  CHECK(firstEnd.status == 128 + SIGTERM);
  CHECK(secondEnd.status == 128 + SIGTERM);
  for (int rank = 0; rank < 4; ++rank) CHECK(waitForFile(directory / ("term_" + std::to_string(rank)), 1s));
}

// docs/SECURITY.md's Slurm recipe: the batch script writes a private secret file on a
// shared filesystem (or sbcast -p copies it to each node) and exports PLTRUN_SECRET_FILE,
// which srun passes to every task.
TEST_CASE("under srun, the tasks share a secret through PLTRUN_SECRET_FILE, a client without it is refused",
          "[slurm][e2e][auth]") {
  TempDir directory;
  SecretFile secret;
  const int port = freePortForSlurm();
  const int jobId = port - 10000;
  const std::vector<std::string> args = {"--nproc-per-node", "1",       "--term-timeout", "5",
                                         testWorker(),       "signals", directory.path()};
  std::vector<std::string> firstEnv = slurmTask(jobId, 0), secondEnv = slurmTask(jobId, 1);
  firstEnv.push_back("PLTRUN_SECRET_FILE=" + secret.path());
  secondEnv.push_back("PLTRUN_SECRET_FILE=" + secret.path());
  ChildProcess first(pltrunCommand(args), firstEnv);
  ChildProcess second(pltrunCommand(args), secondEnv);
  for (int rank = 0; rank < 2; ++rank) REQUIRE(waitForFile(directory / ("ready_" + std::to_string(rank)), 30s));

  CHECK_THROWS_AS(pltrun::TcpStore(loopbackStoreOptions(port)).numKeys(), pltrun::Error);
  // The run id under Slurm is the job id.
  CHECK(pltrun::TcpStore(loopbackStoreOptions(port, secret.secret(), std::to_string(jobId))).numKeys() > 0);

  first.signal(SIGTERM);
  second.signal(SIGTERM);
  Finished firstEnd = first.wait(30s);
  Finished secondEnd = second.wait(30s);
  INFO(firstEnd.err << secondEnd.err);
  CHECK(firstEnd.status == 128 + SIGTERM);
  CHECK(secondEnd.status == 128 + SIGTERM);
}
