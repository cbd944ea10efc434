#pragma once
// Where this node's workers run, decided once before the mode starts: the GPUs the workers
// may see (with --auto-select-gpus the free ones, chosen and locked), the layout over them
// and the CPUs this process may use, and with --numa-binding each local rank's CPUs near
// its GPU (sysfs read here, under PLTRUN_SYSFS_ROOT when a test sets it). launcher.cc logs
// the notes and hands the layout to the static job or the agent.

#include <optional>
#include <vector>

#include "launcher/placement/gpu_auto_select.h"
#include "launcher/placement/worker_layout.h"
#include "launcher/plan/launch_config.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

struct NodePlacement {
  WorkerLayout layout;
  /// --auto-select-gpus: the chosen GPUs and their locks; keep it for the job's life.
  std::optional<AutoSelectedGpus> autoSelected;
  /// The lines for the launcher's log, in the order they arose (the choice, the binding).
  std::vector<LaunchNote> notes;
};

/// The placement of `config`'s workers on this node; `environment` is the workers' (their
/// CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, PLTRUN_SYSFS_ROOT). Throws InvalidArgument
/// for what this machine cannot do (too few free GPUs, a binding with no CPU left).
NodePlacement placeWorkersOnThisNode(const LaunchConfig& config, const Environment& environment);

}  // namespace pltrun
