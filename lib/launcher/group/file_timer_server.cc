#include "launcher/group/file_timer_server.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "base/seconds_text.h"
#include "launcher/group/worker_group.h"
#include "launcher/process/process_end.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// torch's client refuses to send more than PIPE_BUF in one request; a longer line is not one.
constexpr size_t kLineLimit = 4096;

double unixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Returns whether this call made the FIFO.
bool makeFifo(const std::string& path) {
  struct stat status {};
  if (lstat(path.c_str(), &status) == 0) {
    if (S_ISFIFO(status.st_mode) && status.st_uid == geteuid()) return false;
    throw Error(ErrorCode::InvalidArgument, "TORCHELASTIC_TIMER_FILE=" + path +
                                                " is not a FIFO of this user: name a new path, or unset it and pltrun "
                                                "makes one");
  }
  if (mkfifo(path.c_str(), 0600) != 0) {
    throw Error(ErrorCode::System,
                "cannot make the FileTimer FIFO TORCHELASTIC_TIMER_FILE=" + path + ": " + std::strerror(errno));
  }
  return true;
}

int openFifo(const std::string& path, int flags) {
  const int fd = open(path.c_str(), flags | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw Error(ErrorCode::System, "cannot open the FileTimer FIFO " + path + ": " + std::strerror(errno));
  return fd;
}

}  // namespace

FileTimerServer::FileTimerServer(boost::asio::io_context& context, std::string path)
    : path_(std::move(path)), madeFifo_(makeFifo(path_)), fifo_(context), checkTimer_(context) {
  fifo_.assign(openFifo(path_, O_RDONLY));
  keepOpen_ = openFifo(path_, O_WRONLY);
  readRequests();
  checkTimers();
}

FileTimerServer::~FileTimerServer() {
  boost::system::error_code ignored;
  checkTimer_.cancel();
  fifo_.close(ignored);
  if (keepOpen_ >= 0) close(keepOpen_);
  if (madeFifo_) unlink(path_.c_str());
}

void FileTimerServer::serve(WorkerGroup* group) {
  group_ = group;
  table_.clear();
}

void FileTimerServer::readRequests() {
  fifo_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code error) {
    if (error) return;
    takeLines();
    readRequests();
  });
}

// Reads what is there, applies every whole line; a line over kLineLimit is skipped whole.
void FileTimerServer::takeLines() {
  char buffer[4096];
  for (ssize_t count; (count = read(fifo_.native_handle(), buffer, sizeof buffer)) > 0;) {
    for (ssize_t index = 0; index < count; ++index) {
      const char c = buffer[index];
      if (c != '\n') {
        if (pending_.size() < kLineLimit)
          pending_ += c;
        else
          skippingLine_ = true;
        continue;
      }
      if (!skippingLine_ && group_ != nullptr) {
        if (auto request = parseFileTimerRequest(pending_)) table_.apply(*request);
      }
      pending_.clear();
      skippingLine_ = false;
    }
  }
}

void FileTimerServer::checkTimers() {
  checkTimer_.expires_after(kCheckInterval);
  checkTimer_.async_wait([this](boost::system::error_code error) {
    if (error) return;
    const double now = unixNow();
    for (const FileTimerRequest& timer : table_.takeExpired(now)) expire(timer, now);
    checkTimers();
  });
}

std::unique_ptr<FileTimerServer> serveFileTimer(const LaunchConfig& config, boost::asio::io_context& context,
                                                const std::string& defaultPath) {
  if (!config.fileTimer) return nullptr;
  auto server =
      std::make_unique<FileTimerServer>(context, config.fileTimerPath.empty() ? defaultPath : config.fileTimerPath);
  spdlog::info("serving torch's FileTimer watchdog at TORCHELASTIC_TIMER_FILE={}", server->path());
  return server;
}

void FileTimerServer::expire(const FileTimerRequest& timer, double now) {
  const std::optional<int> rank = group_ != nullptr ? group_->rankOfProcess(timer.pid) : std::nullopt;
  if (!rank) {
    spdlog::warn(
        "FileTimer: the timer '{}' of pid {} expired, but that is not a process of this job's workers: "
        "not signalled",
        timer.scopeId, timer.pid);
    return;
  }
  const std::string what = "its FileTimer scope '" + timer.scopeId + "' expired " +
                           secondsText(std::chrono::duration<double>(now - timer.expirationTime)) +
                           " s ago: " + signalName(timer.signal) + " sent to pid " + std::to_string(timer.pid);
  spdlog::warn("rank {}: {}", *rank, what);
  group_->noteExpiredTimer(*rank, what);
  kill(timer.pid, timer.signal);
}

}  // namespace pltrun
