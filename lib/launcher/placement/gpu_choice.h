#pragma once
// --auto-select-gpus' decision: which GPUs are free, and which of them to take, from a
// snapshot of this node's GPUs (gpu_occupancy.h reads it, gpu_lock.h adds the GPUs other
// pltruns hold). Pure: every inventory, busy, exclusive or short, is a value in a test.

#include <optional>
#include <string>
#include <vector>

namespace pltrun {

/// NVML's compute mode, as far as it decides whether a GPU can be chosen.
enum class GpuComputeMode {
  Default,           ///< any number of processes may share it
  ExclusiveProcess,  ///< one process at a time: a second one fails at its first CUDA call
  Prohibited,        ///< no process may use it
};

/// A process with a CUDA context on a GPU.
struct GpuProcess {
  long long pid = 0;
  /// Its command name, as its owner set it (printed through terminalSafe); empty where it
  /// cannot be read (another PID namespace).
  std::string name;
};

/// One GPU this process can see, as it stood when the snapshot was taken.
struct GpuState {
  std::string id;  ///< as CUDA_VISIBLE_DEVICES names it: an index or a GPU-/MIG- UUID
  /// The same GPU whatever the name: its NVML index, or its UUID where it has none (MIG);
  /// names its lock (gpu_lock.h), so "0" and "GPU-..." of one GPU share one lock.
  std::string lockKey;
  GpuComputeMode mode = GpuComputeMode::Default;
  std::vector<GpuProcess> processes;
  /// Another pltrun holds this GPU's lock: its pid (0 where the lock file does not say).
  std::optional<long long> lockedByPltrun;
  std::string lockedByUser;  ///< that pltrun's user, where it is not this user
  /// Why this GPU cannot be checked or locked ("NVML does not know it"); empty: it was.
  std::string unknown;
};

/// What chooseFreeGpus decided: the chosen GPUs, or why none is chosen.
struct GpuChoice {
  std::vector<int> chosen;  ///< indices into the snapshot, in its order
  std::string refusal;      ///< empty when `chosen` holds the GPUs asked for
};

/// Free: no process on it, not prohibited, not held by another pltrun, and checked.
bool gpuIsFree(const GpuState& gpu);

/// Why `gpu` is not free, for the refusal line: "GPU 0 (exclusive mode) held by pid 1234
/// (python)"; empty for a free GPU.
std::string busyGpuText(const GpuState& gpu);

/// The first `count` free GPUs of `gpus` in their order, every free one for count -1 (at
/// least one). Too few free: no GPU and a one-line refusal saying how many were asked, how
/// many are free of how many, and what holds each busy one.
GpuChoice chooseFreeGpus(const std::vector<GpuState>& gpus, int count);

}  // namespace pltrun
