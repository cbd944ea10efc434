#pragma once
// tests/e2e/worker_endings.py under the real pltrun, cold or forked from its zygote
// (--preload json), and what the tests of its supervision read back: the pid each worker
// wrote and whether it was forked, and pltrun's children (its workers and its zygote).

#include <sys/types.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

inline const std::string& endingsScript() {
  static const std::string path = std::string(TESTS_SOURCE_DIR) + "/e2e/worker_endings.py";
  return path;
}

/// pltrun's argv for `workers` workers of worker_endings.py doing `action` in `dir`, with
/// `flags` before the program; forked: --preload json.
inline std::vector<std::string> endingsJob(bool forked, std::vector<std::string> flags, const TempDir& dir,
                                           const std::vector<std::string>& action, int workers = 2) {
  std::vector<std::string> args = {"--nproc-per-node", std::to_string(workers)};
  if (forked) args.insert(args.end(), {"--preload", "json"});
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {endingsScript(), dir.path()});
  args.insert(args.end(), action.begin(), action.end());
  return pltrunCommand(args);
}

struct WorkerStart {
  pid_t pid = -1;
  std::string how;  ///< "json": forked from the zygote; "cold"
};

/// What rank `rank` wrote in `attempt`; pid -1 when nothing. `wait`: how long to wait for
/// it (none once pltrun has ended: every worker wrote it before).
inline WorkerStart workerStart(const TempDir& dir, int rank, int attempt = 0,
                               std::chrono::milliseconds wait = std::chrono::milliseconds(0)) {
  const std::string path = dir / ("pid." + std::to_string(rank) + "." + std::to_string(attempt));
  WorkerStart start;
  if (!waitForFile(path, wait)) return start;
  std::istringstream(readFile(path)) >> start.pid >> start.how;
  return start;
}

/// The children of `pid` now (every thread's), from /proc/PID/task/*/children.
inline std::vector<pid_t> childrenOf(pid_t pid) {
  std::vector<pid_t> children;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", error)) {
    std::ifstream list(task.path() / "children");
    for (pid_t child; list >> child;) children.push_back(child);
  }
  return children;
}

/// The children of `pid` that run `INTERPRETER -u -c CODE` and are none of `workers`:
/// pltrun's zygote (issue 43), as opposed to its own helper process and its workers (forked
/// ones show the zygote's command line too).
inline std::vector<pid_t> zygotesOf(pid_t pid, const std::vector<pid_t>& workers) {
  std::vector<pid_t> zygotes;
  for (pid_t child : childrenOf(pid)) {
    if (std::find(workers.begin(), workers.end(), child) != workers.end()) continue;
    std::ifstream file("/proc/" + std::to_string(child) + "/cmdline");
    std::vector<std::string> argv;
    for (std::string arg; std::getline(file, arg, '\0');) argv.push_back(arg);
    if (argv.size() >= 3 && argv[1] == "-u" && argv[2] == "-c") zygotes.push_back(child);
  }
  return zygotes;
}

/// Lines of `text` that contain `part`.
inline int linesContaining(const std::string& text, const std::string& part) {
  std::istringstream lines(text);
  int count = 0;
  for (std::string line; std::getline(lines, line);) count += line.find(part) != std::string::npos;
  return count;
}

}  // namespace pltrun::test
