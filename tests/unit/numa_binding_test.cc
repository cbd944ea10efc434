// --numa-binding's choice of CPUs over a fake sysfs: torchrun's four modes (node, socket,
// exclusive, core-complex, as torch/numa/binding.py defines them), the CPUs pltrun may use,
// and one-line errors for what cannot be read.

#include "launcher/plan/numa_binding.h"

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pltrun/error.h"

using pltrun::numaCpusForGpu;
using pltrun::NumaMode;

namespace {

// Socket 0: NUMA node 0 (CPUs 0-7: four cores, siblings N and N+4; two L3 caches, cores 0-1
// and 2-3) and node 1 (CPUs 8-9, one core). Socket 1: node 2 (CPUs 10-11, one core).
// GPUs: two on node 0, one on node 2, and one whose numa_node is -1 (one-node machines).
struct FakeSysfs {
  std::map<std::string, std::string> files;

  FakeSysfs() {
    files["devices/system/node/possible"] = "0-2\n";
    files["devices/system/node/node0/cpulist"] = "0-7\n";
    files["devices/system/node/node1/cpulist"] = "8-9\n";
    files["devices/system/node/node2/cpulist"] = "10-11\n";
    for (int cpu = 0; cpu < 12; ++cpu) {
      const std::string base = "devices/system/cpu/cpu" + std::to_string(cpu);
      files[base + "/topology/physical_package_id"] = cpu < 10 ? "0\n" : "1\n";
      const int core = cpu < 8 ? cpu % 4 : cpu;
      files[base + "/topology/thread_siblings_list"] =
          cpu < 8 ? std::to_string(core) + "," + std::to_string(core + 4) + "\n" : std::to_string(cpu) + "\n";
      files[base + "/cache/index0/type"] = "Instruction\n";
      files[base + "/cache/index0/level"] = "1\n";
      files[base + "/cache/index0/shared_cpu_list"] = std::to_string(cpu) + "\n";
      files[base + "/cache/index1/type"] = "Unified\n";
      files[base + "/cache/index1/level"] = "3\n";
      files[base + "/cache/index1/shared_cpu_list"] = cpu >= 8 ? "8-11\n" : core < 2 ? "0-1,4-5\n" : "2-3,6-7\n";
    }
    files["bus/pci/devices/0000:01:00.0/numa_node"] = "0\n";
    files["bus/pci/devices/0000:02:00.0/numa_node"] = "0\n";
    files["bus/pci/devices/0000:c1:00.0/numa_node"] = "2\n";
    files["bus/pci/devices/0000:03:00.0/numa_node"] = "-1\n";
  }

  pltrun::SysfsReader reader() const {
    return [this](const std::string& path) -> std::optional<std::string> {
      auto found = files.find(path);
      if (found == files.end()) return std::nullopt;
      return found->second;
    };
  }
};

const std::vector<std::string> kGpus = {"0000:01:00.0", "0000:02:00.0", "0000:c1:00.0"};
const std::set<int> kAll = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

std::string cpusOf(NumaMode mode, size_t gpu, const std::set<int>& allowed = kAll,
                   const std::vector<std::string>& gpus = kGpus) {
  FakeSysfs sysfs;
  return pltrun::cpuListText(numaCpusForGpu(mode, gpu, gpus, allowed, sysfs.reader()));
}

}  // namespace

TEST_CASE("numa: node binds to every CPU of the GPU's NUMA node", "[numa]") {
  CHECK(cpusOf(NumaMode::Node, 0) == "0-7");
  CHECK(cpusOf(NumaMode::Node, 1) == "0-7");
  CHECK(cpusOf(NumaMode::Node, 2) == "10-11");
  // numa_node -1 (a machine with one node) is node 0, as torch reads it.
  CHECK(cpusOf(NumaMode::Node, 0, kAll, {"0000:03:00.0"}) == "0-7");
}

TEST_CASE("numa: socket binds to every node of the GPU's socket", "[numa]") {
  CHECK(cpusOf(NumaMode::Socket, 0) == "0-9");
  CHECK(cpusOf(NumaMode::Socket, 2) == "10-11");
}

TEST_CASE("numa: exclusive splits the node's physical cores among its GPUs, siblings together", "[numa]") {
  CHECK(cpusOf(NumaMode::Exclusive, 0) == "0-1,4-5");
  CHECK(cpusOf(NumaMode::Exclusive, 1) == "2-3,6-7");
  CHECK(cpusOf(NumaMode::Exclusive, 2) == "10-11");  // alone on node 2: its one core
  // Three GPUs on node 0's four cores: the first gets the extra core.
  const std::vector<std::string> three = {"0000:01:00.0", "0000:02:00.0", "0000:03:00.0"};
  CHECK(cpusOf(NumaMode::Exclusive, 0, kAll, three) == "0-1,4-5");
  CHECK(cpusOf(NumaMode::Exclusive, 1, kAll, three) == "2,6");
  CHECK(cpusOf(NumaMode::Exclusive, 2, kAll, three) == "3,7");
}

TEST_CASE("numa: core-complex gives each GPU of a node its own last-level cache group", "[numa]") {
  CHECK(cpusOf(NumaMode::CoreComplex, 0) == "0-1,4-5");
  CHECK(cpusOf(NumaMode::CoreComplex, 1) == "2-3,6-7");
  CHECK(cpusOf(NumaMode::CoreComplex, 2) == "10-11");
  // The group with more usable CPUs comes first.
  CHECK(cpusOf(NumaMode::CoreComplex, 0, {0, 2, 3, 6, 7}) == "2-3,6-7");
}

TEST_CASE("numa: only CPUs pltrun may use are chosen, and none left is one line", "[numa]") {
  CHECK(cpusOf(NumaMode::Node, 0, {1, 2, 9}) == "1-2");
  try {
    cpusOf(NumaMode::Node, 2, {0, 1});
    FAIL("a binding to no CPU was accepted");
  } catch (const pltrun::Error& error) {
    CHECK(error.code() == pltrun::ErrorCode::InvalidArgument);
    CHECK_THAT(error.what(), Catch::Contains("no CPU of NUMA node 2"));
  }
}

TEST_CASE("numa: what sysfs does not have is named", "[numa]") {
  FakeSysfs sysfs;
  sysfs.files.erase("devices/system/node/node0/cpulist");
  try {
    numaCpusForGpu(NumaMode::Node, 0, kGpus, kAll, sysfs.reader());
    FAIL("a missing cpulist was not reported");
  } catch (const pltrun::Error& error) {
    CHECK_THAT(error.what(), Catch::Contains("/sys/devices/system/node/node0/cpulist"));
  }
  CHECK_THROWS_AS(numaCpusForGpu(NumaMode::Node, 0, {"0000:ff:00.0"}, kAll, sysfs.reader()), pltrun::Error);
}

TEST_CASE("numa: modes and CPU lists as torchrun and sysfs spell them", "[numa]") {
  CHECK(pltrun::parseNumaMode("core-complex") == NumaMode::CoreComplex);
  CHECK_THROWS_AS(pltrun::parseNumaMode("cores"), pltrun::Error);
  CHECK(pltrun::parseCpuList("0-2,4,6-7\n") == std::set<int>{0, 1, 2, 4, 6, 7});
  CHECK_FALSE(pltrun::parseCpuList("3-1").has_value());
  CHECK_FALSE(pltrun::parseCpuList("a").has_value());
  CHECK(pltrun::cpuListText({0, 1, 2, 4, 6, 7}) == "0-2,4,6-7");
}
