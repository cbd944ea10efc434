// resolveWorkerLayout: --nproc-per-node and --devices, parsed, against given GPUs and CPUs.

#include "launcher/placement/worker_layout.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::layoutNeedsGpus;
using pltrun::resolveWorkerLayout;
using pltrun::WorkerLayout;

namespace {

using Ids = std::vector<std::string>;
using Nproc = std::optional<pltrun::WorkerCount>;
using Devices = std::optional<pltrun::DeviceSelection>;
const Ids kNoGpus;
const Ids kFourGpus{"0", "1", "2", "3"};
constexpr int kCpus = 12;

// The flags' values as parseCommandLine stores them.
Nproc nproc(const char* value) { return pltrun::parseWorkerCount(value); }
Devices devices(const char* value) { return pltrun::parseDeviceSelection(value); }

// Requires an InvalidArgument naming `flagName`; returns the message.
std::string layoutError(const Nproc& count, const Devices& selection, const Ids& gpus, const std::string& flagName) {
  INFO("nproc " << (count ? pltrun::workerCountText(*count) : "(none)") << ", devices "
                << (selection ? selection->spelled : "(none)") << ", " << gpus.size() << " GPUs");
  try {
    resolveWorkerLayout(count, selection, gpus, kCpus);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(error.what(), Contains(flagName));
    return error.what();
  }
  FAIL("resolveWorkerLayout accepted the request");
  return {};
}

}  // namespace

TEST_CASE("without --nproc-per-node or --devices: one worker, GPUs untouched", "[worker_layout]") {
  for (const Ids& gpus : {kNoGpus, kFourGpus}) {
    WorkerLayout layout = resolveWorkerLayout(std::nullopt, std::nullopt, gpus, kCpus);
    CHECK(layout.workerCount == 1);
    CHECK_FALSE(layout.cudaVisibleDevices.has_value());
  }
}

TEST_CASE("flag --nproc-per-node N: N workers", "[worker_layout]") {
  for (int count : {1, 3, 8, 64}) {
    WorkerLayout layout = resolveWorkerLayout(pltrun::WorkerCount::fixed(count), std::nullopt, kFourGpus, kCpus);
    CHECK(layout.workerCount == count);
    CHECK_FALSE(layout.cudaVisibleDevices.has_value());
  }
}

TEST_CASE("flag --nproc-per-node cpu: one worker per CPU", "[worker_layout]") {
  CHECK(resolveWorkerLayout(nproc("cpu"), std::nullopt, kFourGpus, kCpus).workerCount == kCpus);
  CHECK(resolveWorkerLayout(nproc("cpu"), std::nullopt, kNoGpus, 3).workerCount == 3);
}

TEST_CASE("flag --nproc-per-node gpu: one worker per visible GPU", "[worker_layout]") {
  CHECK(resolveWorkerLayout(nproc("gpu"), std::nullopt, kFourGpus, kCpus).workerCount == 4);
  CHECK(resolveWorkerLayout(nproc("gpu"), std::nullopt, Ids{"GPU-a"}, kCpus).workerCount == 1);
  CHECK_FALSE(resolveWorkerLayout(nproc("gpu"), std::nullopt, kFourGpus, kCpus).cudaVisibleDevices.has_value());
  SECTION("no GPU is an error") {
    CHECK_THAT(layoutError(nproc("gpu"), std::nullopt, kNoGpus, "--nproc-per-node"), Contains("no GPU"));
  }
}

TEST_CASE("flag --nproc-per-node auto: GPUs when there are some, else CPUs", "[worker_layout]") {
  CHECK(resolveWorkerLayout(nproc("auto"), std::nullopt, kFourGpus, kCpus).workerCount == 4);
  CHECK(resolveWorkerLayout(nproc("auto"), std::nullopt, kNoGpus, kCpus).workerCount == kCpus);
}

TEST_CASE("flag --devices chooses the GPUs, one worker each", "[worker_layout]") {
  SECTION("\"1, 3\" of four") {
    WorkerLayout layout = resolveWorkerLayout(std::nullopt, devices("1, 3"), kFourGpus, kCpus);
    CHECK(layout.workerCount == 2);
    CHECK(layout.cudaVisibleDevices == "1,3");
  }
  SECTION("indices map into the visible ids") {
    WorkerLayout layout = resolveWorkerLayout(std::nullopt, devices("1,3"), Ids{"4", "5", "6", "7"}, kCpus);
    CHECK(layout.workerCount == 2);
    CHECK(layout.cudaVisibleDevices == "5,7");
  }
  SECTION("a count takes the first visible GPUs") {
    WorkerLayout layout = resolveWorkerLayout(std::nullopt, devices("2"), Ids{"GPU-x", "GPU-y", "GPU-z"}, kCpus);
    CHECK(layout.workerCount == 2);
    CHECK(layout.cudaVisibleDevices == "GPU-x,GPU-y");
  }
  SECTION("-1: every visible GPU") {
    WorkerLayout layout = resolveWorkerLayout(std::nullopt, devices("-1"), kFourGpus, kCpus);
    CHECK(layout.workerCount == 4);
    CHECK(layout.cudaVisibleDevices == "0,1,2,3");
  }
  SECTION("bad --devices values are reported against --devices") {
    layoutError(std::nullopt, devices("5"), kFourGpus, "--devices");
    layoutError(std::nullopt, devices("1"), kNoGpus, "--devices");
  }
}

TEST_CASE("flag --devices 0: no GPU, workers from --nproc-per-node or 1", "[worker_layout]") {
  SECTION("alone: one worker, every GPU hidden") {
    WorkerLayout layout = resolveWorkerLayout(std::nullopt, devices("0"), kFourGpus, kCpus);
    CHECK(layout.workerCount == 1);
    REQUIRE(layout.cudaVisibleDevices.has_value());
    CHECK(layout.cudaVisibleDevices->empty());
  }
  SECTION("with a count") {
    WorkerLayout layout = resolveWorkerLayout(nproc("3"), devices("0"), kFourGpus, kCpus);
    CHECK(layout.workerCount == 3);
    CHECK(layout.cudaVisibleDevices == "");
  }
  SECTION("with cpu") { CHECK(resolveWorkerLayout(nproc("cpu"), devices("0"), kFourGpus, kCpus).workerCount == kCpus); }
  SECTION("with auto: the GPUs are hidden, so auto means CPUs") {
    WorkerLayout layout = resolveWorkerLayout(nproc("auto"), devices("0"), kFourGpus, kCpus);
    CHECK(layout.workerCount == kCpus);
    CHECK(layout.cudaVisibleDevices == "");
  }
  SECTION("with gpu: an error") {
    CHECK_THAT(layoutError(nproc("gpu"), devices("0"), kFourGpus, "--nproc-per-node"), Contains("--devices 0"));
  }
  SECTION("works without any GPU") {
    CHECK(resolveWorkerLayout(nproc("2"), devices("0"), kNoGpus, kCpus).workerCount == 2);
  }
}

TEST_CASE("flag --devices with --nproc-per-node: they must agree", "[worker_layout]") {
  SECTION("matching count") {
    WorkerLayout layout = resolveWorkerLayout(nproc("2"), devices("1, 3"), kFourGpus, kCpus);
    CHECK(layout.workerCount == 2);
    CHECK(layout.cudaVisibleDevices == "1,3");
  }
  SECTION("gpu agrees with any selection") {
    CHECK(resolveWorkerLayout(nproc("gpu"), devices("0,2,3"), kFourGpus, kCpus).workerCount == 3);
  }
  SECTION("a contradicting count is an error") {
    std::string message = layoutError(nproc("3"), devices("1, 3"), kFourGpus, "--nproc-per-node");
    CHECK_THAT(message, Contains("'3'"));
    CHECK_THAT(message, Contains("--devices"));
    layoutError(nproc("1"), devices("2"), kFourGpus, "--nproc-per-node");
  }
}

TEST_CASE("layoutNeedsGpus: only when GPUs decide the layout", "[worker_layout]") {
  CHECK_FALSE(layoutNeedsGpus(std::nullopt, std::nullopt));
  CHECK_FALSE(layoutNeedsGpus(nproc("4"), std::nullopt));
  CHECK_FALSE(layoutNeedsGpus(nproc("cpu"), std::nullopt));
  CHECK(layoutNeedsGpus(nproc("gpu"), std::nullopt));
  CHECK(layoutNeedsGpus(nproc("auto"), std::nullopt));
  CHECK(layoutNeedsGpus(std::nullopt, devices("0")));
  CHECK(layoutNeedsGpus(nproc("2"), devices("1,3")));
}
