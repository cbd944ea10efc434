#pragma once
// A fake sysfs (PLTRUN_SYSFS_ROOT) for --numa-binding on any machine: two NUMA nodes of
// one CPU each, CPU 0 and CPU 1, which every test machine has, and one GPU on each.

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace pltrun::test {

/// Under `root`: the GPU at PCI address `gpuOnNode0` ("0000:01:00.0") on node 0 (CPU 0),
/// `gpuOnNode1` on node 1 (CPU 1).
inline void writeTwoNodeSysfs(const std::string& root, const std::string& gpuOnNode0, const std::string& gpuOnNode1) {
  const std::vector<std::pair<std::string, std::string>> files{{"/bus/pci/devices/" + gpuOnNode0 + "/numa_node", "0\n"},
                                                               {"/bus/pci/devices/" + gpuOnNode1 + "/numa_node", "1\n"},
                                                               {"/devices/system/node/node0/cpulist", "0\n"},
                                                               {"/devices/system/node/node1/cpulist", "1\n"},
                                                               {"/devices/system/node/possible", "0-1\n"}};
  for (const auto& [path, text] : files) {
    std::filesystem::create_directories(std::filesystem::path(root + path).parent_path());
    std::ofstream(root + path) << text;
  }
}

}  // namespace pltrun::test
