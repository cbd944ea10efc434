#include "launcher/placement/cuda_device_order.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>

#include "base/terminal_text.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {

NvmlIndexChoice nvmlIndexOfCudaIndex(size_t cudaIndex, const std::vector<NvmlGpu>& gpus,
                                     const std::optional<std::string>& order) {
  NvmlIndexChoice choice;
  if (cudaIndex >= gpus.size()) {
    choice.problem = "NVML lists " + std::to_string(gpus.size()) + " GPU(s)";
    return choice;
  }
  const bool byBusId = order && *order == "PCI_BUS_ID";
  if (!byBusId) {
    std::set<std::string> models;
    for (const NvmlGpu& gpu : gpus) models.insert(terminalSafe(gpu.model));
    if (models.size() > 1) {
      choice.problem = "CUDA numbers GPUs of different models (" + joinText({models.begin(), models.end()}, ", ") +
                       ") fastest first, an order pltrun cannot know: set CUDA_DEVICE_ORDER=PCI_BUS_ID, or name "
                       "the GPUs by UUID in CUDA_VISIBLE_DEVICES";
      return choice;
    }
  }
  std::vector<size_t> byAddress(gpus.size());
  std::iota(byAddress.begin(), byAddress.end(), 0);
  std::stable_sort(byAddress.begin(), byAddress.end(), [&gpus](size_t a, size_t b) {
    return std::tie(gpus[a].domain, gpus[a].bus, gpus[a].device) <
           std::tie(gpus[b].domain, gpus[b].bus, gpus[b].device);
  });
  choice.nvmlIndex = byAddress[cudaIndex];
  return choice;
}

}  // namespace pltrun
