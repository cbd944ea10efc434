#pragma once
// torchrun's worker watchdog, compatible: with TORCHELASTIC_ENABLE_FILE_TIMER=1 pltrun
// serves the FIFO at TORCHELASTIC_TIMER_FILE (file_timer_table.h has the protocol). A
// process whose timer expires is sent the signal it asked for, but only a process of one of
// the running group's workers (a line in the FIFO cannot make pltrun signal anyone else),
// and the worker's failure report names the scope that expired. One server for the run:
// every attempt's workers write to the same path, as under torchrun.
// Only the job's own processes hold timers: a request for a pid that is not one of the
// workers or a descendant of one is ignored, and the table is bounded per worker and in all
// (file_timer_table.h). What is refused is said in one warning line, then counted and said
// again at most once a minute, never a line per request. A scope id is the worker's text:
// it is shown escaped (terminalSafeLine: a line break as \x0a), on one line.

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "launcher/group/file_timer_table.h"
#include "launcher/plan/launch_config.h"

namespace pltrun {

class WorkerGroup;

class FileTimerServer {
 public:
  /// How often expired timers are looked for (torch's server: max_interval=0.1).
  static constexpr std::chrono::milliseconds kCheckInterval{100};
  /// The least time between two warning lines about refused timers of one kind.
  static constexpr std::chrono::seconds kRefusalWarningInterval{60};

  /// Makes the FIFO at `path` unless one is there, and opens it. Throws Error with one line
  /// when `path` is something else or cannot be made.
  FileTimerServer(boost::asio::io_context& context, std::string path);
  /// Closes the FIFO; removes it if this server made it.
  ~FileTimerServer();
  FileTimerServer(const FileTimerServer&) = delete;
  FileTimerServer& operator=(const FileTimerServer&) = delete;

  const std::string& path() const { return path_; }
  /// The group whose workers' timers are served now (nullptr between attempts: their timers
  /// are dropped).
  void serve(WorkerGroup* group);

 private:
  // Refused requests of one kind: the first is a warning line at once, the rest are counted
  // and said in one line at most every kRefusalWarningInterval.
  struct Refusals {
    size_t unsaid = 0;
    std::optional<std::chrono::steady_clock::time_point> lastSaid;
  };

  void readRequests();
  void takeLines();
  void take(const FileTimerRequest& request);
  std::optional<int> rankOf(pid_t pid);
  void refuse(Refusals& refusals, const std::string& first);
  void sayRefusals(Refusals& refusals, const char* what);
  void checkTimers();
  void expire(const FileTimerRequest& timer, double now);

  std::string path_;
  bool madeFifo_ = false;
  int keepOpen_ = -1;  ///< a writer of our own: the FIFO never reads as ended between clients
  boost::asio::posix::stream_descriptor fifo_;
  boost::asio::steady_timer checkTimer_;
  std::string pending_;  ///< a line not yet complete
  bool skippingLine_ = false;
  FileTimerTable table_;
  WorkerGroup* group_ = nullptr;
  /// pid -> rank (or none) as found within the last kCheckInterval: a flood of requests
  /// for one pid walks /proc once.
  std::unordered_map<pid_t, std::optional<int>> ranks_;
  Refusals foreign_;
  Refusals overLimit_;
};

/// The run's server when the config asks for one (TORCHELASTIC_ENABLE_FILE_TIMER=1), at its
/// TORCHELASTIC_TIMER_FILE or else at `defaultPath`; nullptr otherwise.
std::unique_ptr<FileTimerServer> serveFileTimer(const LaunchConfig& config, boost::asio::io_context& context,
                                                const std::string& defaultPath);

}  // namespace pltrun
