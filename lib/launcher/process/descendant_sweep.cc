#include "launcher/process/descendant_sweep.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace pltrun {

namespace {

// This process's children, from /proc/self/task/TID/children (every thread's: a child
// belongs to the thread that forked it).
std::vector<pid_t> currentChildren() {
  std::vector<pid_t> children;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream list(task.path() / "children");
    for (pid_t pid = 0; list >> pid;) children.push_back(pid);
  }
  return children;
}

// Whether `pid` leads a process group of its own (setsid, setpgid: out of reach of its
// worker's group kill), by /proc/PID/stat's pgrp, after the command name in parentheses;
// still readable for a zombie.
bool leadsOwnGroup(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 1));
  std::string state;
  pid_t parent = 0, group = 0;
  fields >> state >> parent >> group;
  return group == pid;
}

std::mutex ownChildrenMutex;
std::set<pid_t> ownChildren;

bool isOwnChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(ownChildrenMutex);
  return ownChildren.count(pid) != 0;
}

}  // namespace

void adoptOrphanedDescendants() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

void claimOwnChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(ownChildrenMutex);
  ownChildren.insert(pid);
}

void releaseOwnChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(ownChildrenMutex);
  ownChildren.erase(pid);
}

int reapAdoptedChildren() {
  int subreaper = 0;
  if (prctl(PR_GET_CHILD_SUBREAPER, &subreaper) != 0 || subreaper == 0) return 0;
  int reaped = 0;
  for (pid_t child : currentChildren()) {
    // WNOHANG: one still running stays; its pid cannot be reused before it is reaped, so
    // the final sweep still finds it by this pid.
    if (!isOwnChild(child) && waitpid(child, nullptr, WNOHANG) == child) ++reaped;
  }
  return reaped;
}

SweptChildren sweepRemainingChildren() {
  SweptChildren swept;
  // Each pass kills the children there are; their own children are reparented here as
  // they die, and found by the next pass. The bound only guards against a fork bomb.
  for (int pass = 0; pass < 1000; ++pass) {
    const std::vector<pid_t> children = currentChildren();
    if (children.empty()) break;
    for (pid_t child : children) {
      const bool ownGroup = leadsOwnGroup(child);
      if (kill(child, SIGKILL) != 0) continue;
      ++swept.killed;
      if (ownGroup) ++swept.outsideGroups;
    }
    for (pid_t child : children) {
      while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  return swept;
}

}  // namespace pltrun
