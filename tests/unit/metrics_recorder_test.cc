// recordWorkerMetrics (metrics_recorder.h): the observers it sets on a group record into the
// metrics after running those set before them (the event log's), and a worker's GPU comes
// from the identify function the mode gives it (worker_gpus.h).

#include "launcher/metrics/metrics_recorder.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <string>
#include <vector>

#include "helpers/scoped_env.h"
#include "launcher/group/worker_group.h"
#include "launcher/metrics/worker_gpus.h"

using namespace pltrun;
using Clock = MetricsRecorder::Clock;

namespace {

WorkerSpec workerSpec(int rank, int localRank, const std::vector<std::string>& environment = {}) {
  WorkerSpec spec;
  spec.rank = rank;
  spec.localRank = localRank;
  spec.launch.environment = environment;
  return spec;
}

bool has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

}  // namespace

TEST_CASE("metrics recorder: the group's observers record after those set before them", "[metrics]") {
  MetricsRecorder recorder({"job", "node"}, Clock::now());
  std::vector<std::string> before;
  GroupSettings group;
  group.onWorkerStarted = [&](const WorkerSpec& spec, pid_t) {
    before.push_back("started " + std::to_string(spec.rank));
  };
  group.onWorkerExited = [&](const WorkerSpec& spec, pid_t, const ProcessEnd&, bool) {
    before.push_back("exited " + std::to_string(spec.rank));
  };
  recordWorkerMetrics(group, recorder, identifyWorkers({{1, GpuIdentity{5, "GPU-x"}}}));
  REQUIRE(group.onHeartbeat);  // set where none was: one call per heartbeat read
  group.onWorkerStarted(workerSpec(0, 0), 100);
  group.onWorkerStarted(workerSpec(1, 1), 101);
  group.onHeartbeat(workerSpec(0, 0), Clock::now(), 7);
  std::string text = recorder.scrape(Clock::now());
  CHECK(has(text, R"(pltrun_rank_info{job="job",node="node",rank="0",local_rank="0",pid="100"} 1)"));
  CHECK(
      has(text, R"(pltrun_rank_info{job="job",node="node",rank="1",local_rank="1",pid="101",gpu="5",UUID="GPU-x"} 1)"));
  CHECK(has(text, R"(pltrun_rank_progress{job="job",node="node",rank="0",local_rank="0"} 7)"));
  CHECK(has(text, R"(pltrun_workers{job="job",node="node",state="running"} 2)"));

  ProcessEnd failed;
  failed.exitCode = 3;
  ProcessEnd terminated;
  terminated.signal = SIGTERM;
  group.onWorkerExited(workerSpec(1, 1), 101, failed, false);
  group.onWorkerExited(workerSpec(0, 0), 100, terminated, true);  // stopped by pltrun
  CHECK(before == std::vector<std::string>{"started 0", "started 1", "exited 1", "exited 0"});
  text = recorder.scrape(Clock::now());
  CHECK(has(text, R"(pltrun_workers{job="job",node="node",state="failed"} 1)"));
  CHECK(has(text, R"(pltrun_workers{job="job",node="node",state="stopped"} 1)"));
  CHECK(has(text, R"(pltrun_workers{job="job",node="node",state="running"} 0)"));
}

TEST_CASE("metrics recorder: each worker's GPU is its LOCAL_RANK-th under its own CUDA_VISIBLE_DEVICES", "[metrics]") {
  pltrun::test::ScopedEnv gpus("PLTRUN_FAKE_GPUS", std::string("4"));
  pltrun::test::ScopedEnv uuids("PLTRUN_FAKE_GPU_UUIDS", std::string("GPU-a,GPU-b,GPU-c,GPU-d"));
  const auto found = gpusOfWorkers({workerSpec(4, 0, {"LOCAL_RANK=0", "CUDA_VISIBLE_DEVICES=2,3"}),
                                    workerSpec(5, 1, {"LOCAL_RANK=1", "CUDA_VISIBLE_DEVICES=2,3"}),
                                    workerSpec(6, 2, {"LOCAL_RANK=2", "CUDA_VISIBLE_DEVICES=2,3"}),
                                    workerSpec(7, 3, {"LOCAL_RANK=0", "CUDA_VISIBLE_DEVICES=1"})});
  REQUIRE(found.size() == 3);  // rank 6 sees two GPUs: none is its own
  CHECK(found.at(4).nvmlIndex == std::optional<int>(2));
  CHECK(found.at(5).uuid == "GPU-d");
  CHECK(found.at(7).uuid == "GPU-b");  // --virtual-local-rank: LOCAL_RANK 0, its GPU alone
}
