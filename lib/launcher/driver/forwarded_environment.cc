#include "launcher/driver/forwarded_environment.h"

#include <spdlog/spdlog.h>

#include "launcher/command_line/process_inputs.h"
#include "launcher/plan/exported_variables.h"

namespace pltrun {
namespace {

constexpr const char* kForwardedPrefixes[] = {"NCCL_", "CUDA_", "PYTHON", "OMP_", "TORCH_",
                                              "GLOO_", "UCX_",  "FI_",    "MKL_", "HF_"};

constexpr const char* kDeepSpeedFile = "DeepSpeed's env file";

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
  // -x and --env-file override them. Each file is another user's way in when it is theirs
  // (a shared working directory): readOwnFileFromDisk refuses those, and names those read.
  const auto name = inherited.find("DS_ENV_FILE");
  const std::string deepspeedFile = name != inherited.end() && !name->second.empty() ? name->second : ".deepspeed_env";
  std::vector<std::optional<std::string>> read;
  if (const auto home = inherited.find("HOME"); home != inherited.end() && !home->second.empty()) {
    read.push_back(
        readEnvFileAt(home->second + "/" + deepspeedFile, kDeepSpeedFile, false, readOwnFileFromDisk, forwarded));
  }
  read.push_back(readEnvFileAt(deepspeedFile, kDeepSpeedFile, false, readOwnFileFromDisk, forwarded));
  read.push_back(addExportedVariables(inherited, remote.exports, remote.envFile, readOwnFileFromDisk, forwarded));
  for (const std::optional<std::string>& line : read) {
    if (line) spdlog::info("{}", *line);
  }
  return forwarded;
}

}  // namespace pltrun
