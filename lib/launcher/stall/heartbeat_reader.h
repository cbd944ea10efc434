#pragma once
// Reads one attempt's heartbeat sockets so that watching costs pltrun little CPU however
// fast the workers beat. A socket that wakes the event loop is read at once. If it had
// beaten within a window's length before, it then rests, out of the readiness set:
// datagrams that arrive meanwhile wake nothing. Resting sockets are read together when a
// shared read window ends, and one is watched again only once a read finds it empty. A
// worker that beats once a step costs one wake-up a beat, as before; four workers beating at
// 1 kHz cost one wake-up per window between them, not 4,000 a second (docs/PERFORMANCE.md). The window adapts
// (nextReadWindow) so that no socket's queue fills: the kernel queues about 10 datagrams, and a sender on a blocking
// socket (the README's Python one-liner) would wait for room.
//
// The readiness set is an epoll instance of its own, whose sockets are armed one-shot: the
// event loop's own reactor keeps every descriptor it knows armed, and would wake for every
// datagram.

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/process/timer_seam.h"
#include "launcher/stall/heartbeat_socket.h"

namespace pltrun {

constexpr std::chrono::milliseconds kShortestReadWindow{1};
/// Also the most by which a heartbeat's time can be late, against --stall-timeout's seconds.
constexpr std::chrono::milliseconds kLongestReadWindow{50};

/// The window after one that ended with `fullest` datagrams read from the fullest socket,
/// where the kernel queues `queueLimit`: halved while a queue was over half full, doubled
/// while every queue stayed under a quarter, within [kShortestReadWindow, kLongestReadWindow].
std::chrono::milliseconds nextReadWindow(std::chrono::milliseconds window, int fullest, int queueLimit);

/// The datagrams the kernel queues on one Unix datagram socket (net.unix.max_dgram_qlen).
int unixDatagramQueueLimit();

class HeartbeatReader {
 public:
  using OnBeat = std::function<void(size_t socket, std::optional<long long> counter)>;

  /// Throws Error(System) when it cannot make its readiness set.
  HeartbeatReader(boost::asio::io_context& context, std::unique_ptr<Timer> windowTimer, size_t sockets);
  ~HeartbeatReader();
  HeartbeatReader(const HeartbeatReader&) = delete;
  HeartbeatReader& operator=(const HeartbeatReader&) = delete;

  /// Binds socket `index` at `path`; throws Error(System) when it cannot.
  void bind(size_t index, const std::string& path);
  /// From now on every socket's heartbeats reach `onBeat`, one call per read that found any.
  void start(OnBeat onBeat);
  /// Reads what every socket holds now, resting or not: the last heartbeats a worker sent
  /// just before it ended count (--max-no-progress-restarts compares them).
  void readAll();
  std::chrono::milliseconds window() const { return window_; }

 private:
  struct Slot {
    std::unique_ptr<HeartbeatSocket> socket;
    bool resting = false;  ///< out of the readiness set; read when the window ends
    std::optional<std::chrono::steady_clock::time_point> lastRead;  ///< that found a datagram
    bool flooding = false;  ///< a window found its queue full: read as each datagram comes
  };

  void watch(size_t index);
  void waitForReadiness();
  void takeReadySockets();
  void rest(size_t index);
  void openWindow();
  void endWindow();
  /// Reads socket `index` and passes on what it found; returns how many datagrams it read.
  int read(size_t index);

  std::unique_ptr<Timer> windowTimer_;
  boost::asio::posix::stream_descriptor readiness_;  ///< the epoll instance, once a socket is bound
  bool waitingForReadiness_ = false;
  std::vector<Slot> slots_;
  OnBeat onBeat_;
  bool windowOpen_ = false;
  std::chrono::milliseconds window_{2};
  int queueLimit_ = 10;                                         ///< read with the first socket
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  ///< for callbacks already queued
};

}  // namespace pltrun
