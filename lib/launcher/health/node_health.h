#pragma once
// Whether this node may take part in the job (issue 46): built-in GPU checks through NVML
// (or PLTRUN_FAKE_GPU_HEALTH, as PLTRUN_FAKE_GPUS stands in for NVML's GPU list) and the
// site's own --health-check command. An elastic agent runs them before it joins each round
// and a static job before it starts; `pltrun health` runs them alone (the multi-host
// driver runs that on every host before it starts the job).
//
// `pltrun health --json` prints NodeHealth::toJson() on one line and exits 0 when the node
// is healthy, 1 when not, 2 on a usage error: the driver reads exactly that.

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/worker_env.h"

namespace pltrun {

/// One check's verdict. Skipped: the driver or GPU does not support it (with why).
struct HealthCheckResult {
  enum class Verdict { Passed, Failed, Skipped };
  std::string name;  ///< "gpu count", "gpu lost", "recovery action", "ecc", "retired pages", "health-check"
  Verdict verdict = Verdict::Passed;
  std::string detail;  ///< one line: what was seen ("GPU 1: fallen off the bus"), or why skipped
};

/// Every check's verdict on this node.
struct NodeHealth {
  std::vector<HealthCheckResult> checks;

  bool healthy() const;
  /// One line naming each failed check and its detail; empty when healthy.
  std::string reason() const;
  /// {"healthy": bool, "reason": "...", "checks": [{"name", "verdict": "passed"|"failed"|"skipped", "detail"}]}
  nlohmann::json toJson() const;
  static NodeHealth fromJson(const nlohmann::json& json);  ///< throws pltrun::Error on a malformed one
};

/// What the checks need (flags --health-check, --health-check-timeout,
/// --health-check-interval; the site config's health-check, health-check-timeout,
/// health-check-interval).
struct HealthCheckOptions {
  std::string command;                                ///< run by /bin/sh -c; empty: none
  std::chrono::milliseconds timeout{60'000};          ///< the command is killed after it, and fails
  std::chrono::milliseconds recheckInterval{30'000};  ///< an unhealthy agent checks again after it
  std::optional<int> expectedGpus;  ///< the GPUs this node must see (from --nproc-per-node gpu / --devices); none: any
};

/// Runs every check once (the GPU checks only where the node has GPUs or fakes them).
NodeHealth checkNodeHealth(const HealthCheckOptions& options, const Environment& inherited);

}  // namespace pltrun
