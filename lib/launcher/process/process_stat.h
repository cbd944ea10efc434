#pragma once
// What /proc/PID/stat says of a process: its state, parent, group and start time. The stack
// sampler reads a worker's state and finds its Python by group; the FileTimer server walks
// parents to tell whether a process descends from one pltrun started (torch's FileTimer
// names processes by pid: only the job's own may hold timers).

#include <sys/types.h>

#include <optional>

namespace pltrun {

struct ProcessStat {
  char state = '?';  ///< 'R', 'S', 'D', 'T' (stopped), 't' (traced), ...
  pid_t parent = 0;
  pid_t group = 0;
  unsigned long long startTime = 0;
};

/// /proc/PID/stat's fields; none when the process is gone or the file unreadable.
std::optional<ProcessStat> readProcessStat(pid_t pid);

/// The parent of `pid`; none when it is gone or unreadable.
std::optional<pid_t> parentOf(pid_t pid);

}  // namespace pltrun
