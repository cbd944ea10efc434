// A node's health checks (lib/launcher/health): the GPU verdicts over surveys (failed on
// the GPUs named, skipped with why, passed), PLTRUN_FAKE_GPU_HEALTH's survey, NodeHealth's
// JSON both ways, the --health-check command run by a real /bin/sh (exit status, its last
// lines, the timeout that kills its whole group), and the options a job's layout gives.

#include "launcher/health/node_health.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"
#include "launcher/health/gpu_health.h"
#include "launcher/health/health_check_command.h"
#include "launcher/health/job_health.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/node_exclusions.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using pltrun::GpuReading;
using pltrun::GpuSurvey;
using pltrun::HealthCheckOptions;
using pltrun::HealthCheckResult;
using pltrun::NodeHealth;
using Verdict = HealthCheckResult::Verdict;
using namespace std::chrono_literals;

namespace {

const HealthCheckResult& named(const std::vector<HealthCheckResult>& checks, const std::string& name) {
  for (const HealthCheckResult& check : checks) {
    if (check.name == name) return check;
  }
  FAIL("no check named " << name);
  return checks.front();
}

HealthCheckOptions commandOptions(const std::string& command, std::chrono::milliseconds timeout = 20s) {
  HealthCheckOptions options;
  options.command = command;
  options.timeout = timeout;
  return options;
}

const pltrun::Environment kPath{{"PATH", "/usr/bin:/bin"}};

}  // namespace

TEST_CASE("health: the GPU checks fail on the GPUs named, and pass on healthy ones", "[health]") {
  const auto checks = pltrun::gpuVerdicts(pltrun::fakeGpuSurvey(4, "1=lost,2=recovery,3=ecc"), 4);
  REQUIRE(checks.size() == pltrun::gpuCheckNames().size());
  CHECK(named(checks, "gpu count").verdict == Verdict::Passed);
  CHECK(named(checks, "gpu lost").verdict == Verdict::Failed);
  CHECK(named(checks, "gpu lost").detail == "GPU 1: lost, fallen off the bus");
  CHECK(named(checks, "recovery action").detail == "GPU 2: recovery action: reset the GPU");
  CHECK_THAT(named(checks, "ecc").detail, StartsWith("GPU 3: "));
  CHECK(named(checks, "retired pages").verdict == Verdict::Passed);
  // The lost GPU could not be read for the others: said, without failing them twice.
  CHECK_THAT(named(checks, "retired pages").detail, Contains("3 GPU(s) fine") && Contains("1 not read"));
  NodeHealth health{checks};
  CHECK_FALSE(health.healthy());
  CHECK(
      health.reason() ==
      "gpu lost: GPU 1: lost, fallen off the bus; recovery action: GPU 2: recovery action: reset the GPU; ecc: GPU 3: "
      "1 uncorrectable ECC error(s) since the driver loaded");
  CHECK(NodeHealth{pltrun::gpuVerdicts(pltrun::fakeGpuSurvey(2, ""), 2)}.healthy());
}

TEST_CASE("health: fewer GPUs than the job expects fail the count, and none read is skipped", "[health]") {
  CHECK(named(pltrun::gpuVerdicts(pltrun::fakeGpuSurvey(3, ""), 4), "gpu count").verdict == Verdict::Failed);
  CHECK(named(pltrun::gpuVerdicts(pltrun::fakeGpuSurvey(3, ""), 4), "gpu count").detail ==
        "this node sees 3 GPU(s), 4 expected");
  GpuSurvey none;
  none.unavailable = "no NVIDIA driver here";
  for (const HealthCheckResult& check : pltrun::gpuVerdicts(none, std::nullopt)) {
    CHECK(check.verdict == Verdict::Skipped);
    CHECK(check.detail == "no NVIDIA driver here");
  }
  CHECK(named(pltrun::gpuVerdicts(none, 2), "gpu count").verdict == Verdict::Failed);
  // A check no GPU reports is skipped with why; the others still pass.
  const auto unsupported = pltrun::gpuVerdicts(pltrun::fakeGpuSurvey(2, "0=unsupported,1=unsupported"), 2);
  CHECK(named(unsupported, "ecc").verdict == Verdict::Skipped);
  CHECK_THAT(named(unsupported, "ecc").detail, Contains("not reported"));
  CHECK(named(unsupported, "gpu lost").verdict == Verdict::Passed);
}

TEST_CASE("health: PLTRUN_FAKE_GPU_HEALTH refuses what it cannot mean, in one line", "[health]") {
  CHECK_THROWS_WITH(pltrun::fakeGpuSurvey(2, "1=melted"), Contains("'melted' is no GPU state"));
  CHECK_THROWS_WITH(pltrun::fakeGpuSurvey(2, "5=lost"), Contains("names no GPU of the 2"));
  CHECK_THROWS_WITH(pltrun::fakeGpuSurvey(2, "lost"), Contains("expected INDEX=STATE"));
  const GpuSurvey survey = pltrun::surveyGpus({{"PLTRUN_FAKE_GPUS", "2"}, {"PLTRUN_FAKE_GPU_HEALTH", "0=remap"}});
  REQUIRE(survey.gpus.size() == 2);
  CHECK(survey.gpus[0].retired.state == GpuReading::State::Bad);
  CHECK(survey.gpus[1].retired.state == GpuReading::State::Ok);
}

TEST_CASE("health: NodeHealth's JSON reads back as written, and a malformed one is refused", "[health]") {
  NodeHealth health{pltrun::gpuVerdicts(pltrun::fakeGpuSurvey(2, "0=lost"), std::nullopt)};
  health.checks.push_back({"health-check", Verdict::Skipped, "none"});
  const nlohmann::json json = health.toJson();
  CHECK(json["healthy"] == false);
  CHECK(json["reason"] == health.reason());
  CHECK(json["checks"][1]["verdict"] == "failed");
  CHECK(json["checks"][5]["verdict"] == "skipped");
  const NodeHealth back = NodeHealth::fromJson(nlohmann::json::parse(json.dump()));
  CHECK(back.toJson() == json);
  CHECK_THROWS_AS(NodeHealth::fromJson(nlohmann::json::parse(R"({"checks": 3})")), pltrun::Error);
  CHECK_THROWS_WITH(NodeHealth::fromJson(nlohmann::json::parse(R"({"checks": [{"name": "x", "verdict": "meh"}]})")),
                    Contains("\"meh\""));
}

TEST_CASE("health: --health-check passes on status 0 and fails otherwise, with its last lines", "[health]") {
  const HealthCheckResult passed = pltrun::runHealthCheckCommand(commandOptions("echo all good"), kPath);
  CHECK(passed.verdict == Verdict::Passed);
  CHECK(passed.detail == "'echo all good' exited with status 0: all good");
  const HealthCheckResult failed = pltrun::runHealthCheckCommand(
      commandOptions("for i in 1 2 3 4 5 6 7; do echo line $i; done; echo disk full >&2; exit 3"), kPath);
  CHECK(failed.verdict == Verdict::Failed);
  CHECK_THAT(failed.detail, Contains("exited with status 3: line 4 | line 5 | line 6 | line 7 | disk full"));
  CHECK_THAT(failed.detail, !Contains("line 3"));
  const HealthCheckResult killed = pltrun::runHealthCheckCommand(commandOptions("kill -9 $$"), kPath);
  CHECK_THAT(killed.detail, Contains("was killed by SIGKILL"));
  // The node's environment reaches it.
  const HealthCheckResult env =
      pltrun::runHealthCheckCommand(commandOptions("test \"$SITE\" = rack7"), {{"SITE", "rack7"}});
  CHECK(env.verdict == Verdict::Passed);
}

TEST_CASE("health: a --health-check past its timeout fails, and its whole group is killed", "[health]") {
  pltrun::test::TempDir dir;
  const std::string pidFile = dir / "child.pid";
  const auto started = std::chrono::steady_clock::now();
  const HealthCheckResult late = pltrun::runHealthCheckCommand(
      commandOptions("sleep 300 & echo $! > " + pidFile + "; echo waiting; wait", 700ms), kPath);
  CHECK(std::chrono::steady_clock::now() - started < 10s);
  CHECK(late.verdict == Verdict::Failed);
  CHECK(late.detail ==
        "'sleep 300 & echo $! > " + pidFile + "; echo waiting; wait' did not finish within 0.7 s: waiting");
  const pid_t child = std::stoi(pltrun::test::readFile(pidFile));
  // Killed with its shell (its zombie is init's or ours to reap: gone from kill(0) soon).
  bool gone = false;
  for (int tries = 0; tries < 100 && !gone; ++tries) {
    gone = kill(child, 0) != 0 ||
           pltrun::test::readFile("/proc/" + std::to_string(child) + "/stat").find(") Z") != std::string::npos;
    if (!gone) usleep(50'000);
  }
  CHECK(gone);
}

TEST_CASE("health: the output tail keeps the last lines, cut from the front", "[health]") {
  CHECK(pltrun::outputTail("a\n\n  b  \nc\n") == "a | b | c");
  const std::string tail = pltrun::outputTail(std::string(5000, 'x'));
  CHECK(tail.size() == pltrun::kHealthCheckTailBytes + 3);
  CHECK_THAT(tail, StartsWith("..."));
}

TEST_CASE("health: a job's layout gives the GPUs a node must see, and when checks run at all", "[health]") {
  pltrun::LaunchConfig config;
  pltrun::WorkerLayout layout;
  layout.workerCount = 4;
  CHECK_FALSE(pltrun::healthOptionsFor(config, layout).expectedGpus);
  CHECK_FALSE(pltrun::checksHealthBeforeLaunch(config, {}));  // one node on CPUs: NVML not loaded
  config.nprocPerNode = pltrun::WorkerCount{pltrun::WorkerCount::Kind::Auto, 0};
  CHECK_FALSE(pltrun::healthOptionsFor(config, layout).expectedGpus);  // auto on a machine of CPUs
  config.nprocPerNode = pltrun::WorkerCount{pltrun::WorkerCount::Kind::Gpu, 0};
  CHECK(pltrun::healthOptionsFor(config, layout).expectedGpus == 4);
  layout.cudaVisibleDevices = "0,2";
  CHECK(pltrun::healthOptionsFor(config, layout).expectedGpus == 2);
  layout.cudaVisibleDevices = "";
  CHECK_FALSE(pltrun::healthOptionsFor(config, layout).expectedGpus);
  config.healthCheck = "true";
  config.healthCheckTimeout = 5s;
  CHECK(pltrun::checksHealthBeforeLaunch(config, {}));
  CHECK(pltrun::healthOptionsFor(config, layout).timeout == 5s);
  pltrun::LaunchConfig elastic;
  elastic.rdzv.maxNodes = 3;
  CHECK(pltrun::checksHealthBeforeLaunch(elastic, {}));
  CHECK(pltrun::checksHealthBeforeLaunch(pltrun::LaunchConfig{}, {{"PLTRUN_FAKE_GPU_HEALTH", "0=lost"}}));
}

TEST_CASE("health: an exclusions line is one JSON line of the store layout's fields", "[health]") {
  const std::string line = pltrun::rdzv::exclusionLine({"node7", "unhealthy", true, "gpu lost: GPU 1", ""},
                                                       std::chrono::system_clock::now());
  REQUIRE(line.back() == '\n');
  const nlohmann::json json = nlohmann::json::parse(line);
  CHECK(json["node"] == "node7");
  CHECK(json["kind"] == "unhealthy");
  CHECK(json["excluded"] == true);
  CHECK(json["reason"] == "gpu lost: GPU 1");
  CHECK_THAT(json["time"].get<std::string>(), Contains("T") && Contains("Z"));
}
