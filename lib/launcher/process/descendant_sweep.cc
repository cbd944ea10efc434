#include "launcher/process/descendant_sweep.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
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

}  // namespace

void adoptOrphanedDescendants() { prctl(PR_SET_CHILD_SUBREAPER, 1); }

int sweepRemainingChildren() {
  int killed = 0;
  // Each pass kills the children there are; their own children are reparented here as
  // they die, and found by the next pass. The bound only guards against a fork bomb.
  for (int pass = 0; pass < 1000; ++pass) {
    const std::vector<pid_t> children = currentChildren();
    if (children.empty()) break;
    for (pid_t child : children) {
      if (kill(child, SIGKILL) == 0) ++killed;
    }
    for (pid_t child : children) {
      while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  return killed;
}

}  // namespace pltrun
