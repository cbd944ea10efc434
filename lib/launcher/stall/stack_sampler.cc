#include "launcher/stall/stack_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "launcher/output/private_file.h"
#include "launcher/process/descendant_sweep.h"

extern char** environ;

namespace pltrun {
namespace {

using Clock = std::chrono::steady_clock;

struct ProcessStat {
  char state = '?';
  pid_t group = 0;
  unsigned long long startTime = 0;
};

// /proc/PID/stat: "pid (comm) state ppid pgrp ... starttime(22nd)"; comm may hold spaces and ')'.
std::optional<ProcessStat> readStat(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(file, text)) return std::nullopt;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  ProcessStat stat;
  long long ppid = 0, group = 0;
  fields >> stat.state >> ppid >> group;
  std::string skipped;
  for (int field = 6; field < 22 && fields >> skipped; ++field) {
  }
  fields >> stat.startTime;
  stat.group = static_cast<pid_t>(group);
  return fields ? std::optional<ProcessStat>(stat) : std::nullopt;
}

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

// The oldest process of the worker's process group that catches `signal`: the worker's
// Python (or the Python a wrapper script started), not its data loaders.
std::optional<pid_t> pythonProcessOf(pid_t workerPid, int signal) {
  if (catchesSignal(workerPid, signal)) return workerPid;
  std::optional<pid_t> oldest;
  unsigned long long oldestStart = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  while (dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0 || pid == workerPid) continue;
    const std::optional<ProcessStat> stat = readStat(pid);
    if (!stat || stat->group != workerPid || !catchesSignal(pid, signal)) continue;
    if (!oldest || stat->startTime < oldestStart) {
      oldest = pid;
      oldestStart = stat->startTime;
    }
  }
  closedir(proc);
  return oldest;
}

off_t fileSize(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 ? info.st_size : 0;
}

std::string readFrom(const std::string& path, off_t offset) {
  std::ifstream file(path, std::ios::binary);
  file.seekg(offset);
  std::string text(kStackTextLimit, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(file.gcount()));
  return text;
}

std::string readSmallFile(const std::string& path) { return readRegularFile(path, kStackTextLimit).value_or(""); }

// eu-stack's output within `timeout`, or empty: it is killed if it takes longer.
std::string runEuStack(pid_t pid, std::chrono::milliseconds timeout) {
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  const std::string pidText = std::to_string(pid);
  char* argv[] = {const_cast<char*>("eu-stack"), const_cast<char*>("-p"), const_cast<char*>(pidText.c_str()), nullptr};
  pid_t child = 0;
  const int failed = posix_spawnp(&child, "eu-stack", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (failed == 0) claimOwnChild(child);
  close(pipeFds[1]);
  std::string output;
  const auto deadline = Clock::now() + timeout;
  while (failed == 0 && output.size() < kStackTextLimit) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd ready{pipeFds[0], POLLIN, 0};
    if (left <= 0 || poll(&ready, 1, static_cast<int>(left)) <= 0) break;
    char buffer[4096];
    const ssize_t count = read(pipeFds[0], buffer, sizeof buffer);
    if (count <= 0) break;
    output.append(buffer, static_cast<size_t>(count));
  }
  close(pipeFds[0]);
  if (failed != 0) return {};
  kill(child, SIGKILL);  // done or late: either way it is reaped now
  waitpid(child, nullptr, 0);
  releaseOwnChild(child);
  return output;
}

StackSample sampleWithoutPython(pid_t pid, std::chrono::milliseconds timeout) {
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string native = runEuStack(pid, timeout);
  if (native.find("TID ") != std::string::npos) return nativeStackSample(native, pid);
  return kernelStackSample(readSmallFile(proc + "/wchan"), readSmallFile(proc + "/stack"));
}

struct PendingDump {
  size_t index;
  std::string file;
  off_t offset;
  off_t lastSize;
  Clock::time_point lastGrowth;
};

// Waits until every signalled dump has been written (its file grew, then stayed the same
// for a moment) or the budget is spent; fills their samples.
void collectDumps(std::vector<PendingDump>& pending, std::vector<StackSample>& samples,
                  std::chrono::milliseconds budget) {
  constexpr auto kSettled = std::chrono::milliseconds(50);
  const auto deadline = Clock::now() + budget;
  auto settled = [&](const PendingDump& dump) {
    return dump.lastSize > dump.offset && Clock::now() - dump.lastGrowth >= kSettled;
  };
  while (Clock::now() < deadline && !std::all_of(pending.begin(), pending.end(), settled)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (PendingDump& dump : pending) {
      const off_t size = fileSize(dump.file);
      if (size != dump.lastSize) {
        dump.lastSize = size;
        dump.lastGrowth = Clock::now();
      }
    }
  }
  for (const PendingDump& dump : pending) {
    if (dump.lastSize > dump.offset) samples[dump.index] = pythonStackSample(readFrom(dump.file, dump.offset));
  }
}

}  // namespace

int pythonStackSignal() { return SIGRTMAX - 4; }

std::vector<StackSample> sampleStacks(const std::vector<StackTarget>& targets, int stackSignal,
                                      std::chrono::milliseconds budget) {
  std::vector<StackSample> samples(targets.size());
  std::vector<PendingDump> pending;
  std::vector<size_t> native;
  for (size_t index = 0; index < targets.size(); ++index) {
    const StackTarget& target = targets[index];
    const std::optional<pid_t> python = pythonProcessOf(target.workerPid, stackSignal);
    const pid_t inspected = python.value_or(target.workerPid);
    const std::optional<ProcessStat> stat = readStat(inspected);
    if (stat && (stat->state == 'T' || stat->state == 't')) {
      samples[index] = stoppedStackSample(stat->state);
    } else if (python && !target.stackFile.empty()) {
      const off_t offset = fileSize(target.stackFile);
      if (kill(*python, stackSignal) == 0) {
        pending.push_back({index, target.stackFile, offset, offset, Clock::now()});
      }
    } else if (stat) {
      native.push_back(index);
    }
  }
  collectDumps(pending, samples, budget);
  for (size_t index : native) samples[index] = sampleWithoutPython(targets[index].workerPid, budget);
  return samples;
}

}  // namespace pltrun
