// torch's store queues (torch 2.7 and later) on the store pltrun gives its workers: 4
// workers share jobs through queue_push / blocking queue_pop on the agent store, on one
// node and across two elastic agents (node 1's workers reach node 0's store). The workers
// speak the wire protocol as torch's libuv client does (tests/e2e/queue_workers.py):
// Debian's torch has no libuv and refuses queues itself.

#include <catch2/catch.hpp>
#include <string>

#include "e2e/elastic_job.h"
#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

const std::string kWorkers = std::string(TESTS_SOURCE_DIR) + "/e2e/queue_workers.py";

}  // namespace

TEST_CASE("queues: 4 workers share jobs through the agent store's queues", "[store][queues][e2e]") {
  Finished run = runPltrun({"--nproc-per-node", "4", kWorkers}, {"PYTHON_EXEC=/usr/bin/python3"});
  INFO(run.out << run.err);
  CHECK(run.status == 0);
  CHECK(run.out.find("rank 0: 99 replies") != std::string::npos);
  for (int rank = 1; rank < 4; ++rank) {
    CHECK(run.out.find("rank " + std::to_string(rank) + ": handled ") != std::string::npos);
  }
}

TEST_CASE("queues: workers of two elastic agents share jobs through node 0's store", "[store][queues][e2e][elastic]") {
  TempDir dir;
  ElasticJob job(dir, "2", "queues", {"--max-restarts", "0"}, {"--no-python", "/usr/bin/python3", kWorkers});
  job.start();
  job.start();
  const std::vector<Finished> ends = job.waitAll(60s);
  INFO("agent 0: " << ends[0].out << ends[0].err << "\nagent 1: " << ends[1].out << ends[1].err);
  CHECK(ends[0].status == 0);
  CHECK(ends[1].status == 0);
  const std::string all = ends[0].out + ends[1].out;
  CHECK(all.find("rank 0: 99 replies") != std::string::npos);
  for (int rank = 1; rank < 4; ++rank)
    CHECK(all.find("rank " + std::to_string(rank) + ": handled ") != std::string::npos);
}
