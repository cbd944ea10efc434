// The floor a launcher is measured against: start N copies of a program with posix_spawn
// and wait for them all, nothing else (no pipes, no process groups, no supervision).
// Usage: spawn_floor N PROGRAM [ARGS...]

#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: spawn_floor N PROGRAM [ARGS...]\n");
    return 2;
  }
  const int count = std::atoi(argv[1]);
  std::vector<pid_t> children;
  for (int index = 0; index < count; ++index) {
    pid_t pid = 0;
    if (posix_spawn(&pid, argv[2], nullptr, nullptr, argv + 2, environ) != 0) return 1;
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed == 0 ? 0 : 1;
}
