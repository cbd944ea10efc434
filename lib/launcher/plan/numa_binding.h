#pragma once
// torchrun's --numa-binding MODE (torch/numa/binding.py): each worker runs on the CPUs
// near the GPU it uses (local rank N uses the workers' GPU N), read from sysfs:
//   node          every CPU of the GPU's NUMA node
//   socket        every CPU of every NUMA node of the GPU's socket
//   exclusive     the GPU's share of its node's physical cores (split evenly among the
//                 GPUs on that node, so no two workers share a core)
//   core-complex  one group of cores sharing a last-level cache on the GPU's node, a
//                 different one per GPU where there are enough
// Always within the CPUs pltrun itself may use. Pure: sysfs comes through a reader (the
// real one: placement/node_placement.cc), so any topology is testable. pltrun binds the worker itself
// (sched_setaffinity before exec): no numactl needed, and the program may be anything.

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pltrun {

enum class NumaMode { Node, Socket, Exclusive, CoreComplex };

/// node, socket, exclusive or core-complex (torchrun's choices); throws InvalidArgument.
NumaMode parseNumaMode(const std::string& text);
const char* numaModeName(NumaMode mode);

/// The text of a sysfs file by its path under /sys ("devices/system/node/possible"), or
/// nothing when it cannot be read.
using SysfsReader = std::function<std::optional<std::string>(const std::string& path)>;

/// sysfs's CPU list format, "0-3,8,10-11"; nothing for text that is not one.
std::optional<std::set<int>> parseCpuList(std::string_view text);
std::string cpuListText(const std::set<int>& cpus);

/// The CPUs of the worker on GPU `device` (an index into `gpuPciAddresses`, every GPU the
/// workers see, as "0000:3b:00.0"), within `allowed`. Throws InvalidArgument naming what
/// could not be read, or why no CPU is left.
std::set<int> numaCpusForGpu(NumaMode mode, size_t device, const std::vector<std::string>& gpuPciAddresses,
                             const std::set<int>& allowed, const SysfsReader& sysfs);

/// The NUMA node of the GPU at `pciAddress` (sysfs's -1, one node only, is 0, as torch reads it).
int numaNodeOfGpu(const std::string& pciAddress, const SysfsReader& sysfs);

}  // namespace pltrun
