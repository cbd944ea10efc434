#include "launcher/placement/gpu_choice.h"

#include "base/terminal_text.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {
namespace {

std::string processText(const GpuProcess& process) {
  std::string text = std::to_string(process.pid);
  // Any user names their own processes: an ESC in the name must not reach the terminal raw.
  return process.name.empty() ? text : text + " (" + terminalSafe(process.name) + ")";
}

std::string heldByText(const std::vector<GpuProcess>& processes) {
  std::vector<std::string> named;
  for (const GpuProcess& process : processes) named.push_back(processText(process));
  return (processes.size() == 1 ? "held by pid " : "held by pids ") + joinText(named, ", ");
}

std::string gpusText(const std::vector<std::string>& ids) {
  return (ids.size() == 1 ? "GPU " : "GPUs ") + joinText(ids, ", ");
}

std::string askedText(int count) {
  if (count < 0) return "every free GPU";
  return std::to_string(count) + (count == 1 ? " free GPU" : " free GPUs");
}

}  // namespace

bool gpuIsFree(const GpuState& gpu) {
  return gpu.unknown.empty() && gpu.processes.empty() && !gpu.lockedByPltrun && gpu.mode != GpuComputeMode::Prohibited;
}

std::string busyGpuText(const GpuState& gpu) {
  const std::string name = "GPU " + gpu.id;
  if (!gpu.unknown.empty()) return name + " " + gpu.unknown;
  if (gpu.mode == GpuComputeMode::Prohibited) return name + " is in compute mode Prohibited";
  // Another pltrun may not have started its workers yet: its lock says whose GPU it is.
  if (gpu.lockedByPltrun) {
    const std::string holder = *gpu.lockedByPltrun > 0 ? " pid " + std::to_string(*gpu.lockedByPltrun) : "";
    const std::string user = gpu.lockedByUser.empty() ? "" : " of user " + terminalSafe(gpu.lockedByUser);
    return name + " is taken by pltrun" + holder + user;
  }
  if (gpu.processes.empty()) return "";
  const std::string mode = gpu.mode == GpuComputeMode::ExclusiveProcess ? " (exclusive mode)" : "";
  return name + mode + " " + heldByText(gpu.processes);
}

GpuChoice chooseFreeGpus(const std::vector<GpuState>& gpus, int count) {
  GpuChoice choice;
  std::vector<std::string> freeIds, busy;
  for (size_t at = 0; at < gpus.size(); ++at) {
    if (!gpuIsFree(gpus[at])) {
      busy.push_back(busyGpuText(gpus[at]));
      continue;
    }
    freeIds.push_back(gpus[at].id);
    if (count < 0 || static_cast<int>(choice.chosen.size()) < count) choice.chosen.push_back(static_cast<int>(at));
  }
  const bool enough = count < 0 ? !freeIds.empty() : static_cast<int>(freeIds.size()) >= count;
  if (enough) return choice;
  choice.chosen.clear();
  const std::string asked = "--auto-select-gpus: asked for " + askedText(count) + ", but ";
  if (gpus.empty()) {
    choice.refusal = asked + "no GPU is visible (no NVIDIA driver, or CUDA_VISIBLE_DEVICES hides them)";
    return choice;
  }
  std::string line = asked + std::to_string(freeIds.size()) + " of the " + std::to_string(gpus.size()) +
                     " visible GPUs " + (freeIds.size() == 1 ? "is" : "are") + " free";
  if (!freeIds.empty()) line += " (" + gpusText(freeIds) + ")";
  if (!busy.empty()) line += "; " + joinText(busy, "; ");
  choice.refusal = line + (busy.empty() ? "; ask for fewer" : "; ask for fewer, or wait for them to end");
  return choice;
}

}  // namespace pltrun
