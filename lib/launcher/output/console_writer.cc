#include "launcher/output/console_writer.h"

#include <poll.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace pltrun {

bool writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // someone made the descriptor non-blocking: wait, do not drop
        pollfd writable{fd, POLLOUT, 0};
        poll(&writable, 1, -1);
        continue;
      }
      return false;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

struct ConsoleWriter::Queue : std::enable_shared_from_this<ConsoleWriter::Queue> {
  explicit Queue(size_t limit) : limit(limit) {}

  // The writing thread: blocking writes, one chunk at a time, outside the lock.
  void writeLoop() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [this] { return stopping || !chunks.empty(); });
      if (chunks.empty()) return;  // stopping, and everything written
      const int fd = chunks.front().first;
      const std::string text = std::move(chunks.front().second);
      chunks.pop_front();
      lock.unlock();
      const bool ok = closed[fd - 1] || writeAll(fd, text.data(), text.size());
      lock.lock();
      if (!ok) closed[fd - 1] = true;  // the reader went away: say nothing more there
      pending -= text.size();
      if (pending <= limit / 2) {
        for (auto& [context, resume] : waiting) boost::asio::post(*context, std::move(resume));
        waiting.clear();
      }
      changed.notify_all();
    }
  }

  // The writing thread starts with the first text, not with the writer: a quiet run (-q,
  // workers that print nothing) never starts it, one thread less at every launch.
  void startWritingOnce() {
    if (writing) return;
    std::thread([queue = shared_from_this()] { queue->writeLoop(); }).detach();
    writing = true;
  }

  const size_t limit;
  bool writing = false;  ///< the writing thread is started (under mutex)
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::pair<int, std::string>> chunks;
  size_t pending = 0;  ///< bytes queued or being written
  bool closed[2] = {false, false};
  bool stopping = false;
  std::vector<std::pair<boost::asio::io_context*, std::function<void()>>> waiting;
};

ConsoleWriter::ConsoleWriter(size_t limit) : queue_(std::make_shared<Queue>(limit)) {}

ConsoleWriter::~ConsoleWriter() {
  std::unique_lock<std::mutex> lock(queue_->mutex);
  queue_->stopping = true;
  queue_->waiting.clear();  // their contexts are gone by now
  queue_->changed.notify_all();
  const auto drained = [this] { return queue_->pending == 0; };
  if (drainLimit_ == std::chrono::milliseconds::max()) {
    queue_->changed.wait(lock, drained);
  } else {
    queue_->changed.wait_for(lock, drainLimit_, drained);
  }
  // A thread still blocked on a console that does not read keeps the queue alive, and
  // ends with the process.
}

void ConsoleWriter::write(const std::string& text, bool toStderr) {
  if (text.empty()) return;
  const int fd = toStderr ? 2 : 1;
  std::lock_guard<std::mutex> lock(queue_->mutex);
  if (queue_->closed[fd - 1]) return;
  queue_->startWritingOnce();
  queue_->pending += text.size();
  queue_->chunks.emplace_back(fd, text);
  queue_->changed.notify_all();
}

bool ConsoleWriter::hasRoom() const {
  std::lock_guard<std::mutex> lock(queue_->mutex);
  return queue_->pending < queue_->limit;
}

void ConsoleWriter::whenRoom(boost::asio::io_context& context, std::function<void()> resume) {
  std::lock_guard<std::mutex> lock(queue_->mutex);
  if (queue_->pending <= queue_->limit / 2) {
    boost::asio::post(context, std::move(resume));
    return;
  }
  queue_->waiting.emplace_back(&context, std::move(resume));
}

ConsoleWriter& launcherConsole() {
  static ConsoleWriter console;  // drained when the process exits
  return console;
}

void ConsoleWriter::limitFinalDrain(std::chrono::milliseconds most) { drainLimit_ = most; }

}  // namespace pltrun
