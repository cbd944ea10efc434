// --nproc-per-node as a value: what parseWorkerCount accepts, and the flag text the driver
// forwards to its agents, which must parse back to the same value.

#include "launcher/plan/worker_count.h"

#include <catch2/catch.hpp>
#include <string>

#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::parseWorkerCount;
using pltrun::WorkerCount;
using pltrun::workerCountText;

TEST_CASE("parseWorkerCount: a count from 1 to 4096, or a keyword", "[worker_count]") {
  CHECK(parseWorkerCount("4") == WorkerCount::fixed(4));
  CHECK(parseWorkerCount(" 4 ") == WorkerCount::fixed(4));
  CHECK(parseWorkerCount("4096") == WorkerCount::fixed(pltrun::kMaxWorkersPerNode));
  CHECK(parseWorkerCount("gpu") == WorkerCount::of(WorkerCount::Kind::Gpu));
  CHECK(parseWorkerCount("cpu") == WorkerCount::of(WorkerCount::Kind::Cpu));
  CHECK(parseWorkerCount("auto") == WorkerCount::of(WorkerCount::Kind::Auto));
  for (std::string value : {"0", "-1", "4097", "abc", "4x", "GPU", " gpu", "1.5", ""}) {
    INFO("value '" << value << "'");
    try {
      parseWorkerCount(value);
      FAIL("accepted");
    } catch (const pltrun::Error& error) {
      CHECK(error.code() == pltrun::ErrorCode::InvalidArgument);
      CHECK_THAT(error.what(), Contains("--nproc-per-node: '" + value + "' is not valid"));
    }
  }
}

TEST_CASE("workerCountText parses back to the same count", "[worker_count]") {
  for (int count = 1; count <= pltrun::kMaxWorkersPerNode; ++count) {
    REQUIRE(parseWorkerCount(workerCountText(WorkerCount::fixed(count))) == WorkerCount::fixed(count));
  }
  for (auto kind : {WorkerCount::Kind::Gpu, WorkerCount::Kind::Cpu, WorkerCount::Kind::Auto}) {
    CHECK(parseWorkerCount(workerCountText(WorkerCount::of(kind))) == WorkerCount::of(kind));
  }
  CHECK(workerCountText(parseWorkerCount(" 8")) == "8");
  CHECK(workerCountText(parseWorkerCount("gpu")) == "gpu");
}
