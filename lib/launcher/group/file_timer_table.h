#pragma once
// Pure: torch's FileTimer protocol (torch.distributed.elastic.timer.FileTimerClient, torch
// 1.13 to 2.x), the server's half. A worker writes one JSON line per request into the FIFO
// at TORCHELASTIC_TIMER_FILE: {"version": 1, "pid": P, "scope_id": S, "expiration_time": T,
// "signal": N}; T is Unix seconds, a negative T releases the timer (pid, scope). A timer
// whose time has passed is expired: its process gets the signal of its earliest expired
// timer that has one, and all that process's timers are dropped, as torch's server does.
// Unlike torch's, the table is bounded: each timer belongs to a worker (its rank), and a new
// timer past a worker's share or the table's size is refused, so that a worker registering
// timers in a loop cannot grow pltrun without end.

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pltrun {

struct FileTimerRequest {
  pid_t pid = 0;
  std::string scopeId;
  double expirationTime = 0;  ///< Unix seconds; negative: release
  int signal = 0;
};

/// One line of the FIFO; none for anything that is not a whole, well-typed request (a line
/// of another program, a truncated write, a pid or signal out of range).
std::optional<FileTimerRequest> parseFileTimerRequest(std::string_view line);

/// The most timers the table holds: torch's client holds one per `expires` scope in use, a
/// few per process. A timer's scope id is at most a line of the FIFO (4 KiB), so a full
/// table is some 20 MB at most.
struct FileTimerLimits {
  size_t perWorker = 256;  ///< of one worker's processes together
  size_t total = 4096;     ///< of all the workers
};

enum class TimerApplied { Set, Released, WorkerFull, TableFull };

class FileTimerTable {
 public:
  explicit FileTimerTable(FileTimerLimits limits = {}) : limits_(limits) {}

  /// Sets or (negative expiration) releases the timer (pid, scope) of the worker `rank`;
  /// a timer that is new and past the limits is not set (WorkerFull, TableFull).
  TimerApplied apply(const FileTimerRequest& request, int rank);
  const FileTimerLimits& limits() const { return limits_; }
  /// For each process with an expired timer that names a signal, that timer (the earliest);
  /// every timer of those processes is dropped. Expired timers without a signal are dropped.
  std::vector<FileTimerRequest> takeExpired(double now);
  /// Drops every timer (a new attempt: the old processes are gone).
  void clear() {
    timers_.clear();
    perWorker_.clear();
  }
  size_t size() const { return timers_.size(); }

 private:
  struct Timer {
    FileTimerRequest request;
    int rank = 0;
  };
  void erase(std::map<std::pair<pid_t, std::string>, Timer>::iterator timer);

  FileTimerLimits limits_;
  std::map<std::pair<pid_t, std::string>, Timer> timers_;
  std::map<int, size_t> perWorker_;  ///< rank -> how many of the timers are its
};

}  // namespace pltrun
