#pragma once
// One worker's heartbeat socket: a Unix datagram socket at PLTRUN_HEARTBEAT, in the run's
// private directory. Every datagram is a heartbeat; a payload that is a decimal number is
// the worker's progress counter. The worker and its children share it. Datagrams from
// another user are dropped (SCM_CREDENTIALS; the directory's mode keeps them out anyway)
// and a payload is read to at most 32 bytes. When to read it is heartbeat_reader.h's
// choice.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace pltrun {

/// What one read of a socket found.
struct DrainedHeartbeats {
  int datagrams = 0;                 ///< read, foreign ones included: how full the queue was
  bool beat = false;                 ///< at least one of them was this user's heartbeat
  std::optional<long long> counter;  ///< the last progress counter among them
};

class HeartbeatSocket {
 public:
  /// Binds the socket at `path` (which must not exist); throws Error(System) when it cannot.
  explicit HeartbeatSocket(std::string path);
  /// Closes the socket and removes its path.
  ~HeartbeatSocket();
  HeartbeatSocket(const HeartbeatSocket&) = delete;
  HeartbeatSocket& operator=(const HeartbeatSocket&) = delete;

  /// Reads what is queued, without waiting, up to `limit` datagrams.
  DrainedHeartbeats drain(int limit);
  const std::string& path() const { return path_; }
  /// Non-blocking; for the reader's readiness set.
  int descriptor() const { return fd_; }

 private:
  std::string path_;
  int fd_;
  uid_t owner_;  ///< this user: they and root may beat
};

/// A heartbeat's payload as a progress counter: a non-negative decimal integer, with
/// surrounding spaces or a newline allowed; none for anything else (still a heartbeat).
std::optional<long long> heartbeatCounter(std::string_view payload);

}  // namespace pltrun
