#pragma once
// A blocking TCP connection whose every read and write has a deadline (poll underneath),
// for clients that must never hang silently.

#include <chrono>
#include <cstdint>
#include <string>

namespace pltrun::detail {

using Clock = std::chrono::steady_clock;

/// now + timeout, saturating: a "wait forever" of milliseconds::max() must not wrap
/// around into the past.
inline Clock::time_point deadlineAfter(std::chrono::milliseconds timeout) {
  const auto now = Clock::now();
  if (timeout.count() <= 0) return now;
  if (timeout > std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) {
    return Clock::time_point::max();
  }
  return now + timeout;
}

class SocketStream {
 public:
  SocketStream() = default;
  ~SocketStream();
  SocketStream(const SocketStream&) = delete;
  SocketStream& operator=(const SocketStream&) = delete;

  /// One attempt to connect to host:port before `deadline`; empty on success, else why not.
  /// Data the peer has not acknowledged within `unacknowledgedLimit` breaks the connection
  /// (TCP_USER_TIMEOUT), so a peer cut off mid-request is noticed in that time instead of
  /// after the kernel's retransmissions (about 15 minutes).
  std::string tryConnect(const std::string& host, int port, Clock::time_point deadline,
                         std::chrono::milliseconds unacknowledgedLimit);
  bool connected() const { return fd_ >= 0; }
  void close();

  enum class Status { Ok, Timeout, Closed, Failed };
  /// Writes all of `bytes`.
  Status writeAll(const std::string& bytes, Clock::time_point deadline);
  /// Reads exactly `size` bytes into `out`.
  Status readExact(void* out, size_t size, Clock::time_point deadline);
  /// Why the last Failed happened.
  const std::string& lastError() const { return lastError_; }

 private:
  bool waitFor(short events, Clock::time_point deadline, Status& status);

  int fd_ = -1;
  std::string lastError_;
};

}  // namespace pltrun::detail
