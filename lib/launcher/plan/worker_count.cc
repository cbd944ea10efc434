#include "launcher/plan/worker_count.h"

#include "launcher/plan/text_parsing.h"

namespace pltrun {
namespace {

constexpr const char* kGpu = "gpu";
constexpr const char* kCpu = "cpu";
constexpr const char* kAuto = "auto";

}  // namespace

WorkerCount parseWorkerCount(const std::string& text) {
  // The keywords are matched exactly, as torchrun does ("GPU" or " gpu" are errors).
  if (text == kGpu) return WorkerCount::of(WorkerCount::Kind::Gpu);
  if (text == kCpu) return WorkerCount::of(WorkerCount::Kind::Cpu);
  if (text == kAuto) return WorkerCount::of(WorkerCount::Kind::Auto);
  if (text == "xpu") {
    throwInvalidFlag("--nproc-per-node", text,
                     "pltrun counts NVIDIA GPUs only (gpu); for Intel GPUs give the count, e.g. --nproc-per-node 4");
  }
  const auto count = parseInteger(trimSpaces(text));
  if (!count || *count < 1 || *count > kMaxWorkersPerNode) {
    throwInvalidFlag("--nproc-per-node", text,
                     "expected an integer 1.." + std::to_string(kMaxWorkersPerNode) + ", gpu, cpu or auto");
  }
  return WorkerCount::fixed(static_cast<int>(*count));
}

int parseTotalProcesses(const std::string& text) {
  return static_cast<int>(parseIntegerFlag("-np", text, 1, 1 << 20, "expected a number of workers, 1 or more"));
}

std::string workerCountText(const WorkerCount& count) {
  switch (count.kind) {
    case WorkerCount::Kind::Gpu:
      return kGpu;
    case WorkerCount::Kind::Cpu:
      return kCpu;
    case WorkerCount::Kind::Auto:
      return kAuto;
    case WorkerCount::Kind::Fixed:
      break;
  }
  return std::to_string(count.count);
}

}  // namespace pltrun
