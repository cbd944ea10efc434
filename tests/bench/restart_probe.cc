// restart_probe: the worker of scripts/bench/elastic.sh's restart measurements. It records
// when each worker of each round starts, on one clock that every process of the machine
// shares (CLOCK_MONOTONIC), so the script can measure how long a job takes to be running
// again after a worker crash or a lost agent.
//
//   restart_probe FILE [CRASH_RANK]
//
// On start every worker appends "start RANK RESTART_COUNT NS" to FILE (one write of one
// line with O_APPEND, so lines of different processes never mix), NS being its
// CLOCK_MONOTONIC time in nanoseconds. Then, by TORCHELASTIC_RESTART_COUNT:
//   0:  the worker of rank CRASH_RANK (if given) waits until all WORLD_SIZE workers of
//       round 0 have written their line, appends "crash RANK 0 NS", and raises SIGKILL;
//       every other worker sleeps until a signal ends it (SIGTERM's default action: it
//       dies at once, so the stop grace of its group is as short as it can be).
//   >0: the worker exits 0 at once, so the job succeeds and ends.
//
//   restart_probe --kill PID FILE
//
// The script's side of a lost-agent measurement: appends "kill PID 0 NS" to FILE, then
// sends SIGKILL to PID at once (no process start-up between the time taken and the kill).

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace {

long long monotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  return std::atoi(value);
}

void appendLine(const char* path, const std::string& line) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "restart_probe: cannot open %s: %s\n", path, std::strerror(errno));
    std::exit(3);
  }
  ssize_t written = write(fd, line.data(), line.size());
  close(fd);
  if (written != static_cast<ssize_t>(line.size())) {
    std::fprintf(stderr, "restart_probe: short write to %s\n", path);
    std::exit(3);
  }
}

// Workers of round 0 that have written their start line.
int startedInRoundZero(const char* path) {
  std::ifstream file(path);
  std::string line;
  int started = 0;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string kind;
    int rank = -1, round = -1;
    if (fields >> kind >> rank >> round && kind == "start" && round == 0) ++started;
  }
  return started;
}

}  // namespace

int main(int argc, char** argv) {
  const long long started = monotonicNs();
  if (argc == 4 && std::strcmp(argv[1], "--kill") == 0) {
    const int pid = std::atoi(argv[2]);
    if (pid <= 1) {
      std::fprintf(stderr, "restart_probe: --kill wants a process id, not '%s'\n", argv[2]);
      return 2;
    }
    appendLine(argv[3], "kill " + std::to_string(pid) + " 0 " + std::to_string(monotonicNs()) + "\n");
    if (kill(pid, SIGKILL) != 0) {
      std::fprintf(stderr, "restart_probe: kill %d: %s\n", pid, std::strerror(errno));
      return 1;
    }
    return 0;
  }
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: restart_probe FILE [CRASH_RANK]\n       restart_probe --kill PID FILE\n");
    return 2;
  }
  const char* path = argv[1];
  const int crashRank = argc == 3 ? std::atoi(argv[2]) : -1;
  const int rank = envInt("RANK", -1);
  const int round = envInt("TORCHELASTIC_RESTART_COUNT", 0);
  const int worldSize = envInt("WORLD_SIZE", 1);
  appendLine(path,
             "start " + std::to_string(rank) + " " + std::to_string(round) + " " + std::to_string(started) + "\n");

  if (round > 0) return 0;
  if (rank == crashRank) {
    // Crash once the whole job runs: the measurement starts from a steady state.
    const long long giveUp = monotonicNs() + 60LL * 1000000000LL;
    while (startedInRoundZero(path) < worldSize) {
      if (monotonicNs() > giveUp) {
        std::fprintf(stderr, "restart_probe: round 0 never had %d workers\n", worldSize);
        return 4;
      }
      usleep(1000);
    }
    appendLine(path, "crash " + std::to_string(rank) + " 0 " + std::to_string(monotonicNs()) + "\n");
    raise(SIGKILL);
  }
  for (;;) pause();  // until SIGTERM (default action) or SIGKILL
}
