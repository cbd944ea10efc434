#include "launcher/stall/process_view.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "launcher/output/private_file.h"
#include "launcher/stall/stack_sample.h"

namespace pltrun {

bool catchesSignal(pid_t pid, int signal) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
    return (mask >> (signal - 1)) & 1ULL;
  }
  return false;
}

std::optional<pid_t> pythonProcessOf(pid_t workerPid, int signal) {
  if (catchesSignal(workerPid, signal)) return workerPid;
  std::optional<pid_t> oldest;
  unsigned long long oldestStart = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  while (dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0 || pid == workerPid) continue;
    const std::optional<ProcessStat> stat = readProcessStat(pid);
    if (!stat || stat->group != workerPid || !catchesSignal(pid, signal)) continue;
    if (!oldest || stat->startTime < oldestStart) {
      oldest = pid;
      oldestStart = stat->startTime;
    }
  }
  closedir(proc);
  return oldest;
}

std::string readProcText(pid_t pid, const std::string& name) {
  return readRegularFile("/proc/" + std::to_string(pid) + "/" + name, kStackTextLimit).value_or("");
}

}  // namespace pltrun
