#pragma once
// Fakes for the worker group's seams (launcher/process/process_runtime.h): processes that
// end when the test says and record the signals sent to them, and a clock the test moves
// forward by hand. Nothing is forked; the output pipes are real in-process pipes.

#include <boost/asio/io_context.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/group/worker_group.h"
#include "launcher/process/process_runtime.h"

namespace pltrun::fake {

/// A started process, alive for the whole test (the group's handle to it may be gone).
class FakeProcess {
 public:
  FakeProcess(boost::asio::io_context& context, ProcessLaunch launch, pid_t groupId,
              boost::asio::readable_pipe& stdoutPipe, boost::asio::readable_pipe& stderrPipe);

  // What the process does, set by the test.
  /// Survives every signal but SIGKILL (a worker that handles SIGTERM and goes on).
  bool ignoresStopSignals = false;
  /// After the end its pipes stay open: a descendant that left its process group holds them.
  bool keepsOutputOpen = false;

  /// Ends the process now (a second end is ignored); the group hears of it from the event loop.
  void endWith(ProcessEnd end);
  void exit(int exitCode) { endWith(ProcessEnd{exitCode, 0}); }
  void dieBy(int signal) { endWith(ProcessEnd{0, signal}); }
  void writeStdout(const std::string& text);
  void writeStderr(const std::string& text);

  // What the test reads.
  const ProcessLaunch& launch() const { return launch_; }
  pid_t groupId() const { return groupId_; }
  bool running() const { return !end_; }
  const std::optional<ProcessEnd>& end() const { return end_; }
  /// The signals the process received while it ran, in order.
  const std::vector<int>& signals() const { return signals_; }
  /// The signals sent to its group after it ended (the group's final SIGKILL sweep).
  const std::vector<int>& signalsAfterEnd() const { return signalsAfterEnd_; }
  bool reaped() const { return reaped_; }
  /// Signals sent to its group id after it was reaped: a real one could reach a stranger.
  const std::vector<int>& signalsAfterReap() const { return signalsAfterReap_; }

  // What the group's StartedProcess handle forwards.
  void asyncWaitForEnd(std::function<void(ProcessEnd)> onEnd);
  void signalGroup(int signal);
  void reap();

 private:
  void deliverEnd();

  boost::asio::io_context& context_;
  ProcessLaunch launch_;
  pid_t groupId_;
  boost::asio::writable_pipe stdout_;
  boost::asio::writable_pipe stderr_;
  std::optional<ProcessEnd> end_;
  std::function<void(ProcessEnd)> onEnd_;
  std::vector<int> signals_;
  std::vector<int> signalsAfterEnd_;
  bool reaped_ = false;
  std::vector<int> signalsAfterReap_;
};

/// Starts FakeProcesses, each with a process group id no real process can have.
class FakeProcessStarter final : public ProcessStarter {
 public:
  std::unique_ptr<StartedProcess> start(boost::asio::io_context& context, const ProcessLaunch& launch,
                                        boost::asio::readable_pipe& stdoutPipe,
                                        boost::asio::readable_pipe& stderrPipe) override;

  /// The test's script, run on each process as it starts (e.g. posts its end).
  std::function<void(FakeProcess&)> onStart;

  /// Every process started so far, in order.
  const std::vector<std::shared_ptr<FakeProcess>>& processes() const { return processes_; }
  FakeProcess& process(size_t index) { return *processes_.at(index); }

 private:
  std::vector<std::shared_ptr<FakeProcess>> processes_;
};

class FakeTimer;

/// Time that moves only when the test says; its timers fire as it passes their deadlines.
class FakeClock final : public TimerFactory {
 public:
  std::unique_ptr<Timer> makeTimer(boost::asio::io_context& context) override;

  /// Moves time forward by `delay`, running, in deadline order, the callback of every timer
  /// whose deadline it reaches (here, on the test's thread, between two turns of its loop).
  void advance(std::chrono::milliseconds delay);
  std::chrono::milliseconds now() const { return now_; }

 private:
  friend class FakeTimer;
  FakeTimer* nextDue(std::chrono::milliseconds until) const;

  std::chrono::milliseconds now_{0};
  std::vector<FakeTimer*> timers_;  ///< every timer alive
};

/// The fakes together, as a WorkerGroup or a Supervisor takes them.
struct FakeRuntime {
  FakeProcessStarter starter;
  FakeClock clock;

  ProcessRuntime runtime() { return ProcessRuntime{starter, clock}; }
};

/// Rank `rank`'s worker as the fakes run it: argv {"worker", "<rank>"}, output kept off the
/// console, the stderr tail kept for the failure report.
WorkerSpec workerSpec(int rank);
/// Ranks 0 to count - 1.
std::vector<WorkerSpec> workerSpecs(int count);
/// The rank a process was started as (workerSpec's argv[1]).
int rankOf(const FakeProcess& process);

}  // namespace pltrun::fake
