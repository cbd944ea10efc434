#include "launcher/placement/gpu_occupancy.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "launcher/placement/nvml_library.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr const char* kFakeBusy = "PLTRUN_FAKE_GPU_BUSY";
constexpr const char* kFakeMode = "PLTRUN_FAKE_GPU_MODE";

// The command name of `pid` on this machine; empty when it is not visible from here.
std::string processName(long long pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

// A lock file's name part: UUIDs of old MIG instances hold '/', which a file name cannot.
std::string lockKeyOf(const std::string& id) {
  std::string key = id;
  for (char& c : key) {
    if (!isNameCharacter(c)) c = '_';
  }
  return key;
}

// GPU `id` before anything is read about it: free, until NVML or the fake variables say otherwise.
GpuState unreadGpu(const std::string& id) {
  GpuState gpu;
  gpu.id = id;
  gpu.lockKey = lockKeyOf(id);
  return gpu;
}

GpuComputeMode parseMode(const char* variable, std::string_view text) {
  if (text == "default") return GpuComputeMode::Default;
  if (text == "exclusive") return GpuComputeMode::ExclusiveProcess;
  if (text == "prohibited") return GpuComputeMode::Prohibited;
  throwInvalidFlag(variable, std::string(text),
                   "expected default, exclusive or prohibited, alone or as INDEX:MODE,...");
}

long long parseFakeNumber(const char* variable, const std::string& value, std::string_view text) {
  const auto number = parseInteger(trimSpaces(text));
  if (!number || *number < 0) {
    throwInvalidFlag(variable, value, "expected INDEX:PID[:NAME],... with numbers for INDEX and PID");
  }
  return *number;
}

// PLTRUN_FAKE_GPU_BUSY: the processes of each fake GPU index.
std::map<long long, std::vector<GpuProcess>> fakeProcesses(const std::string& value) {
  std::map<long long, std::vector<GpuProcess>> processes;
  for (std::string_view entry : splitText(value, ',')) {
    if (trimSpaces(entry).empty()) continue;
    const std::vector<std::string_view> parts = splitText(entry, ':');
    if (parts.size() < 2 || parts.size() > 3) {
      throwInvalidFlag(kFakeBusy, value, "expected INDEX:PID[:NAME],... e.g. 0:1234:python,2:5678");
    }
    GpuProcess process{parseFakeNumber(kFakeBusy, value, parts[1]), ""};
    process.name = parts.size() == 3 ? std::string(trimSpaces(parts[2])) : processName(process.pid);
    processes[parseFakeNumber(kFakeBusy, value, parts[0])].push_back(process);
  }
  return processes;
}

// PLTRUN_FAKE_GPU_MODE: one mode for every GPU (index -1), or INDEX:MODE pairs.
std::map<long long, GpuComputeMode> fakeModes(const std::string& value) {
  std::map<long long, GpuComputeMode> modes;
  for (std::string_view entry : splitText(value, ',')) {
    entry = trimSpaces(entry);
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      modes[-1] = parseMode(kFakeMode, entry);
      continue;
    }
    const auto index = parseInteger(trimSpaces(entry.substr(0, colon)));
    if (!index || *index < 0) throwInvalidFlag(kFakeMode, value, "expected INDEX:MODE,... with a number for INDEX");
    modes[*index] = parseMode(kFakeMode, trimSpaces(entry.substr(colon + 1)));
  }
  return modes;
}

std::vector<GpuState> fakeOccupancy(const std::vector<std::string>& ids) {
  const char* busy = std::getenv(kFakeBusy);
  const char* mode = std::getenv(kFakeMode);
  const auto processes = fakeProcesses(busy != nullptr ? busy : "");
  const auto modes = fakeModes(mode != nullptr ? mode : "");
  std::vector<GpuState> gpus;
  for (const std::string& id : ids) {
    GpuState gpu = unreadGpu(id);
    const long long index = parseInteger(id).value_or(-2);  // a UUID: no fake entry names it
    if (auto found = processes.find(index); found != processes.end()) gpu.processes = found->second;
    if (auto found = modes.find(index); found != modes.end()) {
      gpu.mode = found->second;
    } else if (auto all = modes.find(-1); all != modes.end()) {
      gpu.mode = all->second;
    }
    gpus.push_back(gpu);
  }
  return gpus;
}

// nvmlDeviceGetComputeRunningProcesses' versions and the size of the entry each fills
// (nvmlProcessInfo_t: the pid first, then the memory, then, since _v2, two instance ids).
struct ProcessListing {
  const char* symbol;
  size_t entrySize;
};
constexpr ProcessListing kListings[] = {{"nvmlDeviceGetComputeRunningProcesses_v3", 24},
                                        {"nvmlDeviceGetComputeRunningProcesses_v2", 24},
                                        {"nvmlDeviceGetComputeRunningProcesses", 16}};
using GetProcesses = int (*)(nvml::Device, unsigned int*, void*);
using GetComputeMode = int (*)(nvml::Device, int*);
using GetIndex = int (*)(nvml::Device, unsigned int*);

// The pids of the compute processes on `device`; false when NVML would not list them.
bool listProcesses(GetProcesses list, size_t entrySize, nvml::Device device, std::vector<GpuProcess>& processes) {
  unsigned int count = 0;
  int status = list(device, &count, nullptr);
  for (int attempt = 0; status == nvml::kInsufficientSize && attempt < 3; ++attempt) {
    count += 8;  // room for processes that start meanwhile
    std::vector<unsigned char> entries(count * entrySize);
    status = list(device, &count, entries.data());
    if (status != nvml::kSuccess) continue;
    for (unsigned int at = 0; at < count; ++at) {
      unsigned int pid = 0;
      std::copy_n(entries.data() + at * entrySize, sizeof pid, reinterpret_cast<unsigned char*>(&pid));
      processes.push_back(GpuProcess{pid, processName(pid)});
    }
  }
  return status == nvml::kSuccess;
}

template <typename Symbol>
void readFromNvml(Symbol symbol, const std::optional<std::string>& cudaDeviceOrder, GpuState& gpu) {
  nvml::Device device = nullptr;
  if (const std::string problem = nvml::deviceHandle(symbol, gpu.id, cudaDeviceOrder, &device); !problem.empty()) {
    gpu.unknown = "could not be checked: " + problem;
    return;
  }
  unsigned int index = 0;
  auto getIndex = reinterpret_cast<GetIndex>(symbol("nvmlDeviceGetIndex"));
  if (getIndex != nullptr && getIndex(device, &index) == nvml::kSuccess) gpu.lockKey = std::to_string(index);
  int mode = 0;
  auto getMode = reinterpret_cast<GetComputeMode>(symbol("nvmlDeviceGetComputeMode"));
  if (getMode != nullptr && getMode(device, &mode) == nvml::kSuccess) {
    gpu.mode = mode == 2   ? GpuComputeMode::Prohibited
               : mode == 0 ? GpuComputeMode::Default
                           : GpuComputeMode::ExclusiveProcess;
  }
  for (const ProcessListing& listing : kListings) {
    if (auto list = reinterpret_cast<GetProcesses>(symbol(listing.symbol))) {
      if (!listProcesses(list, listing.entrySize, device, gpu.processes)) {
        gpu.unknown = "could not be checked: NVML did not list its processes";
      }
      return;
    }
  }
  gpu.unknown = "could not be checked: this NVML cannot list processes";
}

}  // namespace

std::vector<GpuState> readGpuOccupancy(const std::vector<std::string>& ids,
                                       const std::optional<std::string>& cudaDeviceOrder) {
  if (std::getenv("PLTRUN_FAKE_GPUS") != nullptr) return fakeOccupancy(ids);
  std::vector<GpuState> gpus;
  for (const std::string& id : ids) gpus.push_back(unreadGpu(id));
  const bool loaded = nvml::withNvml([&gpus, &cudaDeviceOrder](auto symbol) {
    for (GpuState& gpu : gpus) readFromNvml(symbol, cudaDeviceOrder, gpu);
  });
  if (!loaded) {
    for (GpuState& gpu : gpus) gpu.unknown = "could not be checked: NVML (libnvidia-ml.so.1) did not load";
  }
  return gpus;
}

}  // namespace pltrun
