#include "launcher/health/node_health.h"

#include "launcher/health/gpu_health.h"
#include "launcher/health/health_check_command.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

using Verdict = HealthCheckResult::Verdict;

const char* verdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::Passed:
      return "passed";
    case Verdict::Failed:
      return "failed";
    case Verdict::Skipped:
      return "skipped";
  }
  return "failed";
}

Verdict verdictNamed(const std::string& name) {
  if (name == "passed") return Verdict::Passed;
  if (name == "failed") return Verdict::Failed;
  if (name == "skipped") return Verdict::Skipped;
  throw Error(ErrorCode::Protocol, "a health check's verdict is \"" + name + "\"; expected passed, failed or skipped");
}

}  // namespace

bool NodeHealth::healthy() const {
  for (const HealthCheckResult& check : checks) {
    if (check.verdict == Verdict::Failed) return false;
  }
  return true;
}

std::string NodeHealth::reason() const {
  std::string line;
  for (const HealthCheckResult& check : checks) {
    if (check.verdict != Verdict::Failed) continue;
    if (!line.empty()) line += "; ";
    line += check.name + ": " + check.detail;
  }
  return line;
}

nlohmann::json NodeHealth::toJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const HealthCheckResult& check : checks) {
    list.push_back({{"name", check.name}, {"verdict", verdictName(check.verdict)}, {"detail", check.detail}});
  }
  return {{"healthy", healthy()}, {"reason", reason()}, {"checks", list}};
}

NodeHealth NodeHealth::fromJson(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("checks") || !json["checks"].is_array()) {
    throw Error(ErrorCode::Protocol, "a node's health is not an object with a \"checks\" array");
  }
  NodeHealth health;
  for (const nlohmann::json& check : json["checks"]) {
    if (!check.is_object() || !check.value("name", nlohmann::json()).is_string() ||
        !check.value("verdict", nlohmann::json()).is_string()) {
      throw Error(ErrorCode::Protocol, "a health check is not an object with a \"name\" and a \"verdict\"");
    }
    const nlohmann::json detail = check.value("detail", nlohmann::json(""));
    health.checks.push_back(HealthCheckResult{check["name"].get<std::string>(),
                                              verdictNamed(check["verdict"].get<std::string>()),
                                              detail.is_string() ? detail.get<std::string>() : detail.dump()});
  }
  return health;
}

NodeHealth checkNodeHealth(const HealthCheckOptions& options, const Environment& inherited) {
  NodeHealth health;
  health.checks = gpuHealthChecks(options.expectedGpus, inherited);
  if (!options.command.empty()) health.checks.push_back(runHealthCheckCommand(options, inherited));
  return health;
}

}  // namespace pltrun
