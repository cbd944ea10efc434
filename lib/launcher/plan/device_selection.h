#pragma once
// Lightning's `devices` strings, read exactly as its GPU guide's table reads them
// (seed 004): "3" = the first three GPUs, "1, 3" = GPUs 1 and 3, "-1" = every GPU,
// "0" = no GPU. Indices count the GPUs this process can see (after CUDA_VISIBLE_DEVICES).
//
// Two steps, because what the text means is known when the command line is read, but
// whether those GPUs exist only once they are counted: parseDeviceSelection checks the
// text, selectDevices checks the selection against the visible GPUs.

#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/worker_count.h"

namespace pltrun {

struct DeviceSelection {
  enum class Kind {
    First,   ///< the first `count` GPUs ("3"); 0: no GPU at all ("0")
    All,     ///< every visible GPU ("-1")
    Listed,  ///< these GPUs, in this order ("1, 3", "[2]", "0,")
    AllBut,  ///< every visible GPU except `indices` (DeepSpeed's --exclude localhost:1)
  };
  Kind kind = Kind::First;
  long long count = 0;             ///< First: as written, not yet compared with the visible GPUs
  std::vector<long long> indices;  ///< Listed: as written, no duplicates, none negative
  std::string spelled;             ///< the flag's text as given: errors quote the user's own words
  std::string flag = "--devices";  ///< the flag the user typed (--include for DeepSpeed's form)

  /// Equal when they select the same GPUs, however spelled.
  bool operator==(const DeviceSelection& other) const {
    return kind == other.kind && count == other.count && indices == other.indices;
  }
  bool operator!=(const DeviceSelection& other) const { return !(*this == other); }
};

/// A --devices value. Throws Error(InvalidArgument) naming --devices for malformed values,
/// negative numbers other than -1, and duplicates.
DeviceSelection parseDeviceSelection(const std::string& value);

/// The selection of these GPU indices (--include host:0,2 hands them to the host's agent).
DeviceSelection listedDevices(const std::vector<int>& indices);

/// Every visible GPU but these (DeepSpeed's --exclude localhost:1 on one node).
DeviceSelection allDevicesBut(const std::vector<int>& indices);

/// The flag text that parses back to `selection` ("3", "-1", "1,3"; one listed GPU is
/// written "2,", since "2" would be a count): what the driver forwards to its agents.
/// AllBut has no --devices text: it is resolved on the node that reads it.
std::string deviceSelectionText(const DeviceSelection& selection);

/// The GPU indices `selection` picks among `visibleGpuCount` GPUs, in its order; empty means
/// "no GPU". Throws InvalidArgument naming the selection's flag for GPUs that are not there.
std::vector<int> selectDevices(const DeviceSelection& selection, int visibleGpuCount);

/// The CUDA_VISIBLE_DEVICES value that exposes `selected` (indices into `visibleIds`, the
/// ids this process sees: the entries of its own CUDA_VISIBLE_DEVICES, or "0".."n-1").
std::string cudaVisibleDevicesFor(const std::vector<int>& selected, const std::vector<std::string>& visibleIds);

/// --auto-select-gpus: how many free GPUs to choose, -1 for every free one. --devices N
/// asks for N and -1 for all; without --devices the worker count says it, one GPU per
/// worker: --nproc-per-node N asks for N, gpu or auto for all, none for 1 (pltrun's one
/// worker, on a free GPU). Throws InvalidArgument, one line, where there is nothing to
/// choose: --devices naming its GPUs ("1, 3", --include, --exclude) or none (0), or
/// --nproc-per-node cpu.
int gpusToAutoSelect(const std::optional<WorkerCount>& nprocPerNode, const std::optional<DeviceSelection>& devices);

}  // namespace pltrun
