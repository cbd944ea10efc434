#include "launcher/group/file_timer_server.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "base/seconds_text.h"
#include "base/terminal_text.h"
#include "launcher/group/worker_group.h"
#include "launcher/process/process_end.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// torch's client refuses to send more than PIPE_BUF in one request; a longer line is not one.
constexpr size_t kLineLimit = 4096;

// How many bytes of a scope id a line shows: the rest of a 4 KiB one adds nothing.
constexpr size_t kShownScope = 200;

double unixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// A worker's scope id as pltrun prints it: no control byte reaches the terminal, and a
// line break in it cannot make a line of pltrun's own.
std::string shownScope(const std::string& scope) {
  const std::string shown = terminalSafeLine(std::string_view(scope).substr(0, kShownScope));
  return "'" + shown + (scope.size() > kShownScope ? "'..." : "'");
}

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
  ranks_.clear();
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
        if (auto request = parseFileTimerRequest(pending_)) take(*request);
      }
      pending_.clear();
      skippingLine_ = false;
    }
  }
}

std::optional<int> FileTimerServer::rankOf(pid_t pid) {
  constexpr size_t kMostRemembered = 4096;
  if (const auto found = ranks_.find(pid); found != ranks_.end()) return found->second;
  if (ranks_.size() >= kMostRemembered) ranks_.clear();
  return ranks_[pid] = group_->rankOfProcess(pid);
}

void FileTimerServer::take(const FileTimerRequest& request) {
  const std::optional<int> rank = rankOf(request.pid);
  if (!rank) {
    if (request.expirationTime >= 0) {
      refuse(foreign_, "FileTimer: ignored the timer " + shownScope(request.scopeId) + " of pid " +
                           std::to_string(request.pid) + ": not a process of this job's workers");
    }
    return;
  }
  const TimerApplied applied = table_.apply(request, *rank);
  if (applied != TimerApplied::WorkerFull && applied != TimerApplied::TableFull) return;
  refuse(overLimit_, "FileTimer: refused the timer " + shownScope(request.scopeId) + " of rank " +
                         std::to_string(*rank) + " (pid " + std::to_string(request.pid) + "): a worker holds at most " +
                         std::to_string(table_.limits().perWorker) + " timers at once, and the job " +
                         std::to_string(table_.limits().total) + " (release them as each scope ends)");
}

void FileTimerServer::refuse(Refusals& refusals, const std::string& first) {
  if (refusals.lastSaid) {
    ++refusals.unsaid;  // said in a line of its own later (sayRefusals)
    return;
  }
  refusals.lastSaid = std::chrono::steady_clock::now();
  spdlog::warn("{}; more such are counted, in one line a minute at most", first);
}

void FileTimerServer::sayRefusals(Refusals& refusals, const char* what) {
  const auto now = std::chrono::steady_clock::now();
  if (refusals.unsaid == 0 || !refusals.lastSaid || now - *refusals.lastSaid < kRefusalWarningInterval) return;
  spdlog::warn("FileTimer: {} more timers {} since the last such line", refusals.unsaid, what);
  refusals.unsaid = 0;
  refusals.lastSaid = now;
}

void FileTimerServer::checkTimers() {
  checkTimer_.expires_after(kCheckInterval);
  checkTimer_.async_wait([this](boost::system::error_code error) {
    if (error) return;
    const double now = unixNow();
    for (const FileTimerRequest& timer : table_.takeExpired(now)) expire(timer, now);
    ranks_.clear();  // a pid may be another process by the next check
    sayRefusals(foreign_, "of processes not the job's ignored");
    sayRefusals(overLimit_, "refused (past the limits)");
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
        "FileTimer: the timer {} of pid {} expired, but that is not a process of this job's workers: "
        "not signalled",
        shownScope(timer.scopeId), timer.pid);
    return;
  }
  const std::string what = "its FileTimer scope " + shownScope(timer.scopeId) + " expired " +
                           secondsText(std::chrono::duration<double>(now - timer.expirationTime)) +
                           " s ago: " + signalName(timer.signal) + " sent to pid " + std::to_string(timer.pid);
  spdlog::warn("rank {}: {}", *rank, what);
  group_->noteExpiredTimer(*rank, what);
  kill(timer.pid, timer.signal);
}

}  // namespace pltrun
