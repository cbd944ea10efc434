#pragma once
// Which GPU CUDA means by an index. NVML (pltrun's view of the GPUs) and CUDA (the workers')
// may number the same GPUs differently: CUDA orders them by PCI bus id only where
// CUDA_DEVICE_ORDER=PCI_BUS_ID, and otherwise (FASTEST_FIRST, its default) puts the fastest
// first; NVML's order is its own. pltrun maps an index through the PCI bus ids: with
// PCI_BUS_ID that is CUDA's rule; with FASTEST_FIRST it assumes that GPUs of one model are
// numbered in PCI bus order, as the driver does when none is faster, and refuses to guess
// where the models differ. Pure: the GPUs are values in a test.

#include <optional>
#include <string>
#include <vector>

namespace pltrun {

/// A GPU as NVML lists it (its place in the vector is NVML's index).
struct NvmlGpu {
  unsigned domain = 0, bus = 0, device = 0;  ///< its PCI address
  std::string model;                         ///< nvmlDeviceGetName: "NVIDIA H100 80GB HBM3"
};

struct NvmlIndexChoice {
  std::optional<size_t> nvmlIndex;  ///< the GPU, as an index into the NvmlGpu list
  std::string problem;              ///< why none: one phrase, "CUDA's order is ..."
};

/// NVML's index of the GPU CUDA numbers `cudaIndex` (counting every GPU, before
/// CUDA_VISIBLE_DEVICES), under the workers' CUDA_DEVICE_ORDER `order` (unset: FASTEST_FIRST).
NvmlIndexChoice nvmlIndexOfCudaIndex(size_t cudaIndex, const std::vector<NvmlGpu>& gpus,
                                     const std::optional<std::string>& order);

}  // namespace pltrun
