#pragma once
// The launcher's stdout and stderr, written by a thread of their own so that a console
// that stops reading (a paused `| less`, Ctrl-S in a terminal, `| sleep`) never blocks the
// event loop: signals, timers, heartbeats, restarts, the workers' store and the log files
// go on. Writes are whole (a prefixed line is never split between two writers) and in the
// order they were made, across both streams and every writer: worker lines, pltrun's own
// log (launcher_log) and the failure report all go through launcherConsole().
//
// Backpressure, not loss: the text waiting for the console is bounded; once it is over the
// bound, the worker streams stop reading their pipes (hasRoom / whenRoom), so the workers
// block in write() like any program whose reader is slow, and nothing is dropped. When the
// reader goes away for good (EPIPE: `pltrun ... | head -1`), console output stops quietly
// and the workers go on; log files still get everything.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace pltrun {

class ConsoleWriter {
 public:
  /// `limit`: bytes waiting before hasRoom() is false.
  explicit ConsoleWriter(size_t limit = 1024 * 1024);
  /// Waits for the console to take what is queued, for at most drainLimit() (unbounded by
  /// default: output is not lost because a reader is slow), then leaves the rest.
  ~ConsoleWriter();
  ConsoleWriter(const ConsoleWriter&) = delete;
  ConsoleWriter& operator=(const ConsoleWriter&) = delete;

  /// Queues all of `text` for fd 1 (`toStderr` false) or fd 2; never blocks.
  void write(const std::string& text, bool toStderr);
  /// Whether the queue is under its limit (a reader of worker output may read more).
  bool hasRoom() const;
  /// Runs `resume` on `context` once the queue has drained to half its limit. `resume`
  /// must not outlive what it refers to being gone (hold a weak_ptr).
  void whenRoom(boost::asio::io_context& context, std::function<void()> resume);
  /// How long the destructor waits at most for a console that does not read (after a stop
  /// signal the user wants pltrun gone, not the tail of the output).
  void limitFinalDrain(std::chrono::milliseconds most);

 private:
  struct Queue;
  std::shared_ptr<Queue> queue_;  ///< shared with the writing thread, which may outlive us
  std::chrono::milliseconds drainLimit_ = std::chrono::milliseconds::max();
};

/// The one console of this process: everything pltrun prints goes through it.
ConsoleWriter& launcherConsole();

/// Writes all of `data` to `fd`, retrying short writes and EINTR. False on any other error.
bool writeAll(int fd, const char* data, size_t size);

}  // namespace pltrun
