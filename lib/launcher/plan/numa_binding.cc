#include "launcher/plan/numa_binding.h"

#include <algorithm>
#include <map>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr int kMaxCacheIndexes = 16;  // cpuN/cache/index0..: a few in practice

// A sysfs value without the newline that ends it.
std::string_view withoutNewline(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  return trimSpaces(text);
}

[[noreturn]] void unreadable(const std::string& what) {
  throw Error(ErrorCode::InvalidArgument, "--numa-binding: cannot read " + what + " from sysfs");
}

std::string readOrFail(const SysfsReader& sysfs, const std::string& path) {
  auto text = sysfs(path);
  if (!text) unreadable("/sys/" + path);
  return *text;
}

std::set<int> cpuListAt(const SysfsReader& sysfs, const std::string& path) {
  auto cpus = parseCpuList(readOrFail(sysfs, path));
  if (!cpus) unreadable("a CPU list at /sys/" + path);
  return *cpus;
}

int integerAt(const SysfsReader& sysfs, const std::string& path) {
  auto value = parseInteger(withoutNewline(readOrFail(sysfs, path)));
  if (!value) unreadable("an integer at /sys/" + path);
  return static_cast<int>(*value);
}

std::string cpuPath(int cpu, const std::string& rest) { return "devices/system/cpu/cpu" + std::to_string(cpu) + rest; }

std::set<int> allowedCpusOfNode(int node, const std::set<int>& allowed, const SysfsReader& sysfs) {
  std::set<int> cpus;
  for (int cpu : cpuListAt(sysfs, "devices/system/node/node" + std::to_string(node) + "/cpulist")) {
    if (allowed.count(cpu) > 0) cpus.insert(cpu);
  }
  return cpus;
}

// The GPUs (indices) on `node`, in order, and where `device` is among them.
std::pair<size_t, size_t> placeAmongNodeGpus(size_t device, const std::vector<std::string>& gpus, int node,
                                             const SysfsReader& sysfs) {
  size_t count = 0, place = 0;
  for (size_t index = 0; index < gpus.size(); ++index) {
    if (numaNodeOfGpu(gpus[index], sysfs) != node) continue;
    if (index == device) place = count;
    ++count;
  }
  return {place, count};
}

// Groups `cpus` by a key CPU (the smallest of the group each belongs to), in key order.
std::map<int, std::set<int>> groupBy(const std::set<int>& cpus, const std::function<std::set<int>(int)>& groupOf) {
  std::map<int, std::set<int>> groups;
  for (int cpu : cpus) {
    const std::set<int> group = groupOf(cpu);
    groups[group.empty() ? cpu : *group.begin()].insert(cpu);
  }
  return groups;
}

std::set<int> socketCpus(int node, const std::set<int>& allowed, const SysfsReader& sysfs) {
  const std::set<int> nodeCpus = allowedCpusOfNode(node, allowed, sysfs);
  if (nodeCpus.empty()) return {};
  const int socket = integerAt(sysfs, cpuPath(*nodeCpus.begin(), "/topology/physical_package_id"));
  std::set<int> cpus;
  for (int other : cpuListAt(sysfs, "devices/system/node/possible")) {
    const std::set<int> otherCpus = allowedCpusOfNode(other, allowed, sysfs);
    if (!otherCpus.empty() && integerAt(sysfs, cpuPath(*otherCpus.begin(), "/topology/physical_package_id")) == socket)
      cpus.insert(otherCpus.begin(), otherCpus.end());
  }
  return cpus;
}

// The node's physical cores split evenly among its GPUs, the first ones one core more.
std::set<int> exclusiveCpus(int node, size_t device, const std::vector<std::string>& gpus, const std::set<int>& allowed,
                            const SysfsReader& sysfs) {
  const auto cores = groupBy(allowedCpusOfNode(node, allowed, sysfs),
                             [&](int cpu) { return cpuListAt(sysfs, cpuPath(cpu, "/topology/thread_siblings_list")); });
  const auto [place, gpuCount] = placeAmongNodeGpus(device, gpus, node, sysfs);
  const size_t each = cores.size() / gpuCount, extra = cores.size() % gpuCount;
  if (each == 0) {
    throw Error(ErrorCode::InvalidArgument, "--numa-binding exclusive: NUMA node " + std::to_string(node) + " has " +
                                                std::to_string(cores.size()) + " physical cores for " +
                                                std::to_string(gpuCount) + " GPUs; use node instead");
  }
  const size_t start = place * each + std::min(place, extra), end = start + each + (place < extra ? 1 : 0);
  std::set<int> cpus;
  size_t index = 0;
  for (const auto& [key, threads] : cores) {
    if (index >= start && index < end) cpus.insert(threads.begin(), threads.end());
    ++index;
  }
  return cpus;
}

// The CPUs sharing `cpu`'s highest-level data or unified cache.
std::set<int> lastLevelCacheOf(int cpu, const SysfsReader& sysfs) {
  int bestLevel = -1;
  std::set<int> shared;
  for (int index = 0; index < kMaxCacheIndexes; ++index) {
    const std::string base = cpuPath(cpu, "/cache/index" + std::to_string(index));
    auto type = sysfs(base + "/type");
    if (!type) break;
    const std::string_view kind = withoutNewline(*type);
    if (kind != "Unified" && kind != "Data") continue;
    const int level = integerAt(sysfs, base + "/level");
    if (level <= bestLevel) continue;
    bestLevel = level;
    shared = cpuListAt(sysfs, base + "/shared_cpu_list");
  }
  return shared;
}

// One cache group per GPU: the groups with most CPUs first, then by lowest CPU.
std::set<int> coreComplexCpus(int node, size_t device, const std::vector<std::string>& gpus,
                              const std::set<int>& allowed, const SysfsReader& sysfs) {
  const auto groups =
      groupBy(allowedCpusOfNode(node, allowed, sysfs), [&](int cpu) { return lastLevelCacheOf(cpu, sysfs); });
  std::vector<std::set<int>> ordered;
  for (const auto& [key, cpus] : groups) ordered.push_back(cpus);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const std::set<int>& a, const std::set<int>& b) { return a.size() > b.size(); });
  if (ordered.empty()) return {};
  return ordered[placeAmongNodeGpus(device, gpus, node, sysfs).first % ordered.size()];
}

}  // namespace

NumaMode parseNumaMode(const std::string& text) {
  for (NumaMode mode : {NumaMode::Node, NumaMode::Socket, NumaMode::Exclusive, NumaMode::CoreComplex}) {
    if (text == numaModeName(mode)) return mode;
  }
  throwInvalidFlag("--numa-binding", text, "expected node, socket, exclusive or core-complex, as torchrun");
}

const char* numaModeName(NumaMode mode) {
  switch (mode) {
    case NumaMode::Node:
      return "node";
    case NumaMode::Socket:
      return "socket";
    case NumaMode::Exclusive:
      return "exclusive";
    case NumaMode::CoreComplex:
      return "core-complex";
  }
  return "node";
}

std::optional<std::set<int>> parseCpuList(std::string_view text) {
  std::set<int> cpus;
  constexpr long long kMaxCpu = 1 << 16;  // far above any machine: a bound on the loop
  for (std::string_view piece : splitText(withoutNewline(text), ',')) {
    piece = trimSpaces(piece);
    if (piece.empty()) continue;
    const size_t dash = piece.find('-');
    auto first = parseInteger(piece.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : parseInteger(piece.substr(dash + 1));
    if (!first || !last || *first < 0 || *last < *first || *last > kMaxCpu) return std::nullopt;
    for (long long cpu = *first; cpu <= *last; ++cpu) cpus.insert(static_cast<int>(cpu));
  }
  return cpus;
}

std::string cpuListText(const std::set<int>& cpus) {
  std::string text;
  for (auto cpu = cpus.begin(); cpu != cpus.end();) {
    int last = *cpu;
    auto next = std::next(cpu);
    while (next != cpus.end() && *next == last + 1) last = *next++;
    if (!text.empty()) text += ",";
    text += std::to_string(*cpu) + (last != *cpu ? "-" + std::to_string(last) : "");
    cpu = next;
  }
  return text;
}

int numaNodeOfGpu(const std::string& pciAddress, const SysfsReader& sysfs) {
  return std::max(integerAt(sysfs, "bus/pci/devices/" + pciAddress + "/numa_node"), 0);
}

std::set<int> numaCpusForGpu(NumaMode mode, size_t device, const std::vector<std::string>& gpuPciAddresses,
                             const std::set<int>& allowed, const SysfsReader& sysfs) {
  const int node = numaNodeOfGpu(gpuPciAddresses.at(device), sysfs);
  std::set<int> cpus;
  switch (mode) {
    case NumaMode::Node:
      cpus = allowedCpusOfNode(node, allowed, sysfs);
      break;
    case NumaMode::Socket:
      cpus = socketCpus(node, allowed, sysfs);
      break;
    case NumaMode::Exclusive:
      cpus = exclusiveCpus(node, device, gpuPciAddresses, allowed, sysfs);
      break;
    case NumaMode::CoreComplex:
      cpus = coreComplexCpus(node, device, gpuPciAddresses, allowed, sysfs);
      break;
  }
  if (cpus.empty()) {
    throw Error(ErrorCode::InvalidArgument, "--numa-binding " + std::string(numaModeName(mode)) +
                                                ": no CPU of NUMA node " + std::to_string(node) + " (GPU " +
                                                gpuPciAddresses.at(device) + ") is among the CPUs pltrun may use (" +
                                                cpuListText(allowed) + ")");
  }
  return cpus;
}

}  // namespace pltrun
