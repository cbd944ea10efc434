#pragma once
// One standard stream of one worker, from its pipe to where the user asked: the console
// (line by line, prefixed), a complete log file (bytes as written), and a short tail kept
// in memory for the failure report.

#include <boost/asio/readable_pipe.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/output/console_writer.h"
#include "launcher/output/filtered_copy.h"
#include "launcher/output/line_prefixer.h"
#include "launcher/output/run_directory.h"

namespace pltrun {

struct OutputRoute {
  bool toConsole = true;
  bool consoleIsStderr = false;  ///< the console stream this one goes to
  RunFile logFile;               ///< none: no log file
  bool keepTail = false;         ///< remember the last lines for the failure report
  /// --duplicate-*-filters: the attempt's filtered copy of this kind of stream; null: none.
  std::shared_ptr<FilteredCopy> filteredCopy;
};

class OutputStream {
 public:
  OutputStream(boost::asio::io_context& context, std::string prefix, OutputRoute route, ConsoleWriter& console);
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  /// The read end the worker's stream is bound to when it is started.
  boost::asio::readable_pipe& pipe() { return pipe_; }

  /// Reads until end of file (every writer closed it), then calls `onEnd` once.
  void start(std::function<void()> onEnd);
  /// Reads on even when the console is behind: the worker has ended, so what is left in its
  /// pipe is bounded, and the group must not wait on a console to end.
  void unthrottle();
  /// Gives up on a pipe that a descendant which escaped its process group keeps open.
  void abandon();
  bool ended() const { return ended_; }

  /// Up to `maxLines` last lines of the stream, if keepTail was asked for.
  std::vector<std::string> lastLines(size_t maxLines) const;

 private:
  void readMore();
  void resume();
  void deliver(size_t size);
  void end();

  boost::asio::io_context& context_;
  boost::asio::readable_pipe pipe_;
  OutputRoute route_;
  ConsoleWriter& console_;
  LinePrefixer prefixer_;
  std::optional<FilteredLines> filtered_;
  int logFd_ = -1;
  /// kReadSize bytes, not zeroed: a vector's zero fill touched 64 KiB per stream at start
  /// (16 page faults each), though a worker that prints little never uses most of it.
  std::unique_ptr<char[]> buffer_;
  std::string consoleText_;
  std::string tail_;
  std::function<void()> onEnd_;
  bool ended_ = false;
  bool parked_ = false;                                         ///< waiting for the console to have room
  bool unthrottled_ = false;                                    ///< see unthrottle()
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  ///< for the console's callbacks
};

}  // namespace pltrun
