#pragma once
// --nproc-per-node as a value: a fixed count, or a keyword that worker_layout turns into a
// count once the GPUs and CPUs are known. Parsed once, when the command line is read, so
// nothing later reads the flag's text again.

#include <string>

namespace pltrun {

/// The most workers --nproc-per-node may ask for on one node.
constexpr int kMaxWorkersPerNode = 4096;

struct WorkerCount {
  enum class Kind {
    Fixed,  ///< `count` workers
    Gpu,    ///< one per visible GPU; an error where there is none
    Cpu,    ///< one per CPU this process may run on
    Auto,   ///< one per visible GPU, else one per CPU
  };
  Kind kind = Kind::Fixed;
  int count = 1;  ///< Fixed: 1..kMaxWorkersPerNode; unused by the keywords

  static WorkerCount fixed(int count) { return WorkerCount{Kind::Fixed, count}; }
  static WorkerCount of(Kind kind) { return WorkerCount{kind, 1}; }
  bool operator==(const WorkerCount& other) const {
    return kind == other.kind && (kind != Kind::Fixed || count == other.count);
  }
  bool operator!=(const WorkerCount& other) const { return !(*this == other); }
};

/// An --nproc-per-node value: 1..kMaxWorkersPerNode (spaces around the number allowed),
/// gpu, cpu or auto. Throws the flag's one-line Error(InvalidArgument) for anything else.
WorkerCount parseWorkerCount(const std::string& text);

/// The flag text that parses back to `count` ("4", "gpu", "cpu", "auto"): what the driver
/// forwards to its agents, and what errors quote.
/// -np's value: workers in all, 1..2^20 (exit 2 otherwise).
int parseTotalProcesses(const std::string& text);

std::string workerCountText(const WorkerCount& count);

}  // namespace pltrun
