#pragma once
// One worker's heartbeat socket: a Unix datagram socket at PLTRUN_HEARTBEAT, in the run's
// private directory. Every datagram is a heartbeat; a payload that is a decimal number is
// the worker's progress counter. The worker and its children share it. Datagrams from
// another user are dropped (SCM_CREDENTIALS; the directory's mode keeps them out anyway),
// a payload is read to at most 32 bytes, and a flood is read in batches so it cannot starve
// the event loop.

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace pltrun {

class HeartbeatSocket {
 public:
  using OnBeat = std::function<void(std::optional<long long> counter)>;

  /// Binds the socket at `path` (which must not exist); throws Error(System) when it cannot.
  HeartbeatSocket(boost::asio::io_context& context, std::string path);
  /// Closes the socket and removes its path.
  ~HeartbeatSocket();
  HeartbeatSocket(const HeartbeatSocket&) = delete;
  HeartbeatSocket& operator=(const HeartbeatSocket&) = delete;

  /// From now on every heartbeat is passed to `onBeat`, on the event loop's thread.
  void start(OnBeat onBeat);
  const std::string& path() const { return path_; }

 private:
  void waitForDatagrams();
  void readDatagrams();

  std::string path_;
  boost::asio::posix::stream_descriptor socket_;
  OnBeat onBeat_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  ///< for handlers posted to the loop
};

/// A heartbeat's payload as a progress counter: a non-negative decimal integer, with
/// surrounding spaces or a newline allowed; none for anything else (still a heartbeat).
std::optional<long long> heartbeatCounter(std::string_view payload);

}  // namespace pltrun
