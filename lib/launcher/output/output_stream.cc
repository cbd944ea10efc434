#include "launcher/output/output_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr size_t kReadSize = 64 * 1024;
// The tail kept for the failure report: enough for a long traceback, bounded for a worker
// that prints gigabytes.
constexpr size_t kTailKeep = 64 * 1024;

// Whether the console stream this route writes to is a terminal (progress bars redraw
// there; in a file or pipe every line stays whole).
bool consoleIsTerminal(const OutputRoute& route) {
  return route.toConsole && isatty(route.consoleIsStderr ? STDERR_FILENO : STDOUT_FILENO) == 1;
}

}  // namespace

OutputStream::OutputStream(boost::asio::io_context& context, std::string prefix, OutputRoute route,
                           ConsoleWriter& console)
    : context_(context),
      pipe_(context),
      route_(std::move(route)),
      console_(console),
      prefixer_(std::move(prefix), consoleIsTerminal(route_)),
      buffer_(new char[kReadSize]) {
  if (route_.logFile) logFd_ = route_.logFile.open(WriteMode::Truncate);
  if (route_.filteredCopy) filtered_.emplace(route_.filteredCopy, prefixer_.prefix());
}

OutputStream::~OutputStream() {
  if (logFd_ >= 0) close(logFd_);
}

void OutputStream::start(std::function<void()> onEnd) {
  onEnd_ = std::move(onEnd);
  readMore();
}

void OutputStream::readMore() {
  if (route_.toConsole && !unthrottled_ && !console_.hasRoom()) {
    // The console is behind: leave the pipe unread (the worker blocks on it) until it
    // catches up; the event loop goes on meanwhile.
    parked_ = true;
    console_.whenRoom(context_, [this, alive = std::weak_ptr<bool>(alive_)] {
      if (!alive.expired()) resume();
    });
    return;
  }
  pipe_.async_read_some(boost::asio::buffer(buffer_.get(), kReadSize),
                        [this](boost::system::error_code error, size_t size) {
                          if (size > 0) deliver(size);
                          if (error) {
                            end();  // eof, or the pipe was closed by abandon()
                            return;
                          }
                          readMore();
                        });
}

void OutputStream::deliver(size_t size) {
  const char* data = buffer_.get();
  if (logFd_ >= 0 && !writeAll(logFd_, data, size)) {
    // A full disk must not stop the job; say it once and keep the console going.
    close(logFd_);
    logFd_ = -1;
    std::string warning = "pltrun: warning: stopped writing " + route_.logFile.path() + ": " + strerror(errno) + "\n";
    console_.write(warning, true);
  }
  if (filtered_) filtered_->feed(std::string_view(data, size));
  if (route_.keepTail) {
    tail_.append(data, size);
    if (tail_.size() > 2 * kTailKeep) tail_.erase(0, tail_.size() - kTailKeep);
  }
  if (route_.toConsole) {
    consoleText_.clear();
    prefixer_.feed(std::string_view(data, size), consoleText_);
    prefixer_.previewProgress(consoleText_);  // on a terminal only
    console_.write(consoleText_, route_.consoleIsStderr);
  }
}

void OutputStream::end() {
  if (ended_) return;
  ended_ = true;
  if (filtered_) filtered_->finish();
  if (route_.toConsole) {
    consoleText_.clear();
    prefixer_.finish(consoleText_);
    console_.write(consoleText_, route_.consoleIsStderr);
  }
  if (onEnd_) onEnd_();
}

void OutputStream::resume() {
  if (!parked_) return;
  parked_ = false;
  readMore();
}

void OutputStream::unthrottle() {
  unthrottled_ = true;
  resume();
}

void OutputStream::abandon() {
  boost::system::error_code ignored;
  pipe_.close(ignored);
}

std::vector<std::string> OutputStream::lastLines(size_t maxLines) const {
  std::vector<std::string> lines;
  size_t stop = tail_.size();
  while (stop > 0 && (tail_[stop - 1] == '\n' || tail_[stop - 1] == '\r')) --stop;
  while (stop > 0 && lines.size() < maxLines) {
    size_t start = tail_.find_last_of('\n', stop - 1);
    start = start == std::string::npos ? 0 : start + 1;
    lines.insert(lines.begin(), tail_.substr(start, stop - start));
    if (start == 0) break;
    stop = start - 1;
  }
  return lines;
}

}  // namespace pltrun
