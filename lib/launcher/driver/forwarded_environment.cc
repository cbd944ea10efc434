#include "launcher/driver/forwarded_environment.h"

#include "launcher/plan/exported_variables.h"

namespace pltrun {
namespace {

constexpr const char* kForwardedPrefixes[] = {"NCCL_", "CUDA_", "PYTHON", "OMP_", "TORCH_",
                                              "GLOO_", "UCX_",  "FI_",    "MKL_", "HF_"};

bool forwardedByDefault(const std::string& name) {
  if (name == "CUDA_VISIBLE_DEVICES") return false;  // which GPUs is each host's own business
  for (const char* prefix : kForwardedPrefixes) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

Environment forwardedEnvironment(const Environment& inherited, const RemoteLaunchSettings& remote) {
  Environment forwarded;
  for (const auto& [name, value] : inherited) {
    if (forwardedByDefault(name)) forwarded[name] = value;
  }
  // DeepSpeed's launcher exports the KEY=VALUE lines of ~/.deepspeed_env, then of
  // ./.deepspeed_env ($DS_ENV_FILE renames both); pltrun reads them the same way, and lets
  // -x and --env-file override them.
  const auto name = inherited.find("DS_ENV_FILE");
  const std::string deepspeedFile = name != inherited.end() && !name->second.empty() ? name->second : ".deepspeed_env";
  if (const auto home = inherited.find("HOME"); home != inherited.end() && !home->second.empty()) {
    readEnvFileIfPresent(home->second + "/" + deepspeedFile, forwarded);
  }
  readEnvFileIfPresent(deepspeedFile, forwarded);
  addExportedVariables(inherited, remote.exports, remote.envFile, forwarded);
  return forwarded;
}

}  // namespace pltrun
