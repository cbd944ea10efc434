#pragma once
// Pure: torch's FileTimer protocol (torch.distributed.elastic.timer.FileTimerClient, torch
// 1.13 to 2.x), the server's half. A worker writes one JSON line per request into the FIFO
// at TORCHELASTIC_TIMER_FILE: {"version": 1, "pid": P, "scope_id": S, "expiration_time": T,
// "signal": N}; T is Unix seconds, a negative T releases the timer (pid, scope). A timer
// whose time has passed is expired: its process gets the signal of its earliest expired
// timer that has one, and all that process's timers are dropped, as torch's server does.

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

class FileTimerTable {
 public:
  /// Sets or (negative expiration) releases the timer (pid, scope).
  void apply(const FileTimerRequest& request);
  /// For each process with an expired timer that names a signal, that timer (the earliest);
  /// every timer of those processes is dropped. Expired timers without a signal are dropped.
  std::vector<FileTimerRequest> takeExpired(double now);
  /// Drops every timer (a new attempt: the old processes are gone).
  void clear() { timers_.clear(); }
  size_t size() const { return timers_.size(); }

 private:
  std::map<std::pair<pid_t, std::string>, FileTimerRequest> timers_;
};

}  // namespace pltrun
