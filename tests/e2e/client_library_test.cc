// The client library in workers started by the real pltrun: barrier, broadcast and
// all-gather over the launcher's store with 4 and 8 processes, again across a forced
// restart, and rank 0's real NCCL unique id reaching every rank (no GPU needed).

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;

namespace {

// What every rank must have recorded: round r gathers every rank's "r<rank>.<r>a<attempt>"
// and receives rank (r mod world)'s broadcast.
std::string expectedReport(int world, int attempt) {
  std::string report;
  for (int round = 0; round < 10; ++round) {
    for (int rank = 0; rank < world; ++rank) {
      report += "r" + std::to_string(rank) + "." + std::to_string(round) + "a" + std::to_string(attempt) + ",";
    }
    report += "from" + std::to_string(round % world) + ";";
  }
  return report;
}

}  // namespace

TEST_CASE("barrier, broadcast and all-gather agree on 4 and 8 ranks under pltrun", "[client]") {
  for (int world : {4, 8}) {
    TempDir dir;
    Finished run = runPltrun({"--nproc-per-node", std::to_string(world), GROUP_WORKER_BINARY, dir.path()});
    INFO("world " << world << ": " << run.err);
    REQUIRE(run.status == 0);
    for (int rank = 0; rank < world; ++rank) {
      CHECK(readFile(dir / ("group_" + std::to_string(rank) + "_0")) == expectedReport(world, 0));
    }
  }
}

TEST_CASE("after a forced restart the group meets again without old keys", "[client][restart]") {
  TempDir dir;
  Finished run =
      runPltrun({"--nproc-per-node", "4", "--max-restarts", "1", GROUP_WORKER_BINARY, dir.path(), "--fail-rank", "2"});
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK(run.err.find("restarting the worker group") != std::string::npos);
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(readFile(dir / ("group_" + std::to_string(rank) + "_1")) == expectedReport(4, 1));
    CHECK_FALSE(std::filesystem::exists(dir / ("group_" + std::to_string(rank) + "_0")));
  }
}

#ifdef NCCL_UNIQUE_ID_BINARY
TEST_CASE("rank 0's real ncclGetUniqueId reaches every rank unchanged", "[client][nccl]") {
  TempDir dir;
  Finished run = runPltrun({"--nproc-per-node", "4", NCCL_UNIQUE_ID_BINARY, dir.path()});
  INFO(run.err);
  REQUIRE(run.status == 0);
  std::set<std::string> ids;
  for (int rank = 0; rank < 4; ++rank) ids.insert(readFile(dir / ("nccl_id_" + std::to_string(rank))));
  REQUIRE(ids.size() == 1);
  const std::string id = *ids.begin();
  CHECK(id.size() == 2 * 128 + std::string(" distinct").size());
  CHECK(id.substr(id.size() - 8) == "distinct");  // two communicators got two ids
  CHECK(id.find_first_not_of('0') < 2 * 128);     // a real id, not zeros
}
#endif
