#include "launcher/placement/gpu_auto_select.h"

#include <algorithm>

#include "launcher/placement/gpu_occupancy.h"
#include "pltrun/error.h"

namespace pltrun {

AutoSelectedGpus autoSelectGpus(int count, const std::vector<std::string>& visibleIds,
                                const std::optional<std::string>& cudaDeviceOrder) {
  std::vector<GpuState> gpus = readGpuOccupancy(visibleIds, cudaDeviceOrder);
  GpuLocks locks(gpuLockDirectory());  // until finishChoosing, other pltruns wait to choose (a bounded wait)
  for (GpuState& gpu : gpus) {
    if (!gpuIsFree(gpu)) continue;  // its lock would change nothing
    const GpuLocks::Attempt attempt = locks.tryLock(gpu.lockKey);
    if (!attempt.problem.empty()) gpu.unknown = attempt.problem;
    if (attempt.heldBy) gpu.lockedByPltrun = attempt.heldBy;
    gpu.lockedByUser = attempt.heldByUser;
  }
  GpuChoice choice = chooseFreeGpus(gpus, count);
  if (!choice.refusal.empty()) throw Error(ErrorCode::InvalidArgument, choice.refusal);
  for (size_t at = 0; at < gpus.size(); ++at) {
    const bool chosen =
        std::find(choice.chosen.begin(), choice.chosen.end(), static_cast<int>(at)) != choice.chosen.end();
    if (!chosen) locks.release(gpus[at].lockKey);
  }
  locks.finishChoosing();
  std::string notice = locks.notice();
  return AutoSelectedGpus{std::move(choice.chosen), std::move(gpus), std::move(locks), std::move(notice)};
}

}  // namespace pltrun
