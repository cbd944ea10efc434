// Other launchers' first command lines with the real pltrun and real workers: each foreign
// spelling gives the workers the environment pltrun's own spelling gives (issue 29), and a
// word pltrun refuses is one line and status 2.

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"
#include "helpers/worker_env_file.h"

using namespace pltrun::test;
using nlohmann::json;

namespace {

// What two runs of the same plan share: everything but the port, the files of this run
// and the process ids.
json comparable(json env) {
  for (const char* perRun : {"MASTER_PORT", "TORCHELASTIC_ERROR_FILE", "pid", "pgid", "local_rank_argument"}) {
    env.erase(perRun);
  }
  return env;
}

// The workers' environments of `pltrun ARGS... WORKER env DIR` (run id fixed), rank by rank.
std::vector<json> environmentsOf(std::vector<std::string> args, int workers,
                                 const std::vector<std::string>& extraEnv = {}) {
  TempDir dir;
  args.insert(args.end(), {"--rdzv-id", "same-run", testWorker(), "env", dir.path()});
  Finished run = runPltrun(args, extraEnv);
  INFO("pltrun " << args.front() << "...: " << run.err);
  REQUIRE(run.status == 0);
  std::vector<json> environments;
  for (int rank = 0; rank < workers; ++rank) environments.push_back(workerEnvironment(dir, rank));
  return environments;
}

void requireSamePlan(const std::vector<json>& theirs, const std::vector<json>& ours) {
  REQUIRE(theirs.size() == ours.size());
  for (size_t rank = 0; rank < ours.size(); ++rank) {
    CAPTURE(rank);
    CHECK(comparable(theirs[rank]) == comparable(ours[rank]));
  }
}

}  // namespace

TEST_CASE("DeepSpeed's --num_gpus gives the workers --devices N's environment and --local_rank=N",
          "[foreign][deepspeed]") {
  const std::vector<std::string> fourGpus = {"PLTRUN_FAKE_GPUS=4", "CUDA_VISIBLE_DEVICES"};
  const std::vector<json> ours = environmentsOf({"--devices", "2"}, 2, fourGpus);
  const std::vector<json> theirs = environmentsOf({"--num_gpus", "2"}, 2, fourGpus);
  requireSamePlan(theirs, ours);
  CHECK(theirs[1]["CUDA_VISIBLE_DEVICES"] == "0,1");  // DeepSpeed's own choice
  for (int rank = 0; rank < 2; ++rank) {
    CHECK(theirs[rank]["local_rank_argument"] == "--local_rank=" + std::to_string(rank));
    CHECK_FALSE(ours[rank].contains("local_rank_argument"));
  }
  const std::vector<json> without = environmentsOf({"--num_gpus", "2", "--no_local_rank"}, 2, fourGpus);
  CHECK_FALSE(without[1].contains("local_rank_argument"));
  // More GPUs than the node has: one line naming the flag typed, nothing started.
  Finished tooMany = runPltrun({"--num_gpus", "8", testWorker(), "exit", "0"}, fourGpus);
  CHECK(tooMany.status == 2);
  CHECK_THAT(tooMany.err, Catch::Contains("--num_gpus") && Catch::Contains("4 are visible"));
}

TEST_CASE("DeepSpeed's -i/-e localhost:N choose the GPUs --devices would", "[foreign][deepspeed]") {
  const std::vector<std::string> fourGpus = {"PLTRUN_FAKE_GPUS=4", "CUDA_VISIBLE_DEVICES"};
  const std::vector<json> included = environmentsOf({"-i", "localhost:1,3"}, 2, fourGpus);
  requireSamePlan(included, environmentsOf({"--devices", "1,3"}, 2, fourGpus));
  CHECK(included[0]["CUDA_VISIBLE_DEVICES"] == "1,3");
  const std::vector<json> excluded = environmentsOf({"-e", "localhost:0"}, 3, fourGpus);
  requireSamePlan(excluded, environmentsOf({"--devices", "1,2,3"}, 3, fourGpus));
  // A GPU this node lacks: the error names the flag the user typed.
  Finished missing = runPltrun({"--include", "localhost:7", testWorker(), "exit", "0"}, fourGpus);
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Catch::Contains("--include") && !Catch::Contains("--devices"));
}

TEST_CASE("mpirun's -N, -x, --env-file, --oversubscribe and -bind-to none on one node", "[foreign][mpirun]") {
  TempDir files;
  const std::string envFile = files.path() + "/job.env";
  std::ofstream(envFile) << "# for every worker\nPLTRUN_TEST_FROM_FILE='from file'\n";
  const std::vector<json> theirs =
      environmentsOf({"-N", "2", "--oversubscribe", "-bind-to", "none", "-x", "PLTRUN_TEST_EXPORTED=yes", "-x",
                      "PLTRUN_TEST_INHERITED", "--env-file", envFile},
                     2, {"PLTRUN_TEST_INHERITED=kept"});
  for (const json& env : theirs) {
    CHECK(env["PLTRUN_TEST_EXPORTED"] == "yes");
    CHECK(env["PLTRUN_TEST_FROM_FILE"] == "from file");
    CHECK(env["PLTRUN_TEST_INHERITED"] == "kept");
  }
  json withoutExports = comparable(theirs[1]);
  withoutExports.erase("PLTRUN_TEST_EXPORTED");
  withoutExports.erase("PLTRUN_TEST_FROM_FILE");
  CHECK(withoutExports == comparable(environmentsOf({"--nproc-per-node", "2"}, 2, {"PLTRUN_TEST_INHERITED=kept"})[1]));
  Finished unset = runPltrun({"-x", "PLTRUN_TEST_NEVER_SET", testWorker(), "exit", "0"}, {"PLTRUN_TEST_NEVER_SET"});
  CHECK(unset.status == 2);
  CHECK_THAT(unset.err, Catch::Contains("-x PLTRUN_TEST_NEVER_SET: not set here"));
}

TEST_CASE("a foreign word pltrun refuses is one line naming it and status 2, never the help", "[foreign]") {
  struct Refused {
    std::vector<std::string> args;
    std::string named;
  };
  for (const Refused& refused :
       {Refused{{"-mca", "btl", "tcp"}, "'-mca' is an Open MPI option"},
        Refused{{"--bind-to", "core"}, "--numa-binding"}, Refused{{"-hostx", "h"}, "unknown option '-hostx'"},
        Refused{{"--num_nodes", "2"}, "--num_nodes"}}) {
    std::vector<std::string> args = refused.args;
    args.insert(args.end(), {testWorker(), "exit", "0"});
    Finished run = runPltrun(args);
    CAPTURE(args, run.err);
    CHECK(run.status == 2);
    CHECK_THAT(run.err, Catch::Contains(refused.named));
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
    CHECK_THAT(run.out, !Catch::Contains("Usage"));
  }
}
