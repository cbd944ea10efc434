#pragma once
// A process's parent, for telling whether a process is a descendant of one pltrun started
// (torch's FileTimer names processes by pid: only the job's own may hold timers).

#include <sys/types.h>

#include <optional>

namespace pltrun {

/// The parent of `pid` by /proc/PID/stat; none when it is gone or unreadable.
std::optional<pid_t> parentOf(pid_t pid);

}  // namespace pltrun
