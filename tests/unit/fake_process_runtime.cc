#include "fake_process_runtime.h"

#include <signal.h>

#include <algorithm>
#include <boost/asio/connect_pipe.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace pltrun::fake {
namespace {

// Above any process id Linux hands out (pid_max is at most 2^22), so the orphan guard's
// kill(-id, SIGKILL), should the test binary die, reaches nobody.
constexpr pid_t kFirstGroupId = 1 << 30;

// The group's handle: it may be destroyed with its attempt while the test still reads the
// process, so the process itself is shared.
class Handle final : public StartedProcess {
 public:
  explicit Handle(std::shared_ptr<FakeProcess> process) : process_(std::move(process)) {}
  pid_t groupId() const override { return process_->groupId(); }
  void asyncWaitForEnd(std::function<void(ProcessEnd)> onEnd) override { process_->asyncWaitForEnd(std::move(onEnd)); }
  void signalGroup(int signal) override { process_->signalGroup(signal); }
  void reap() override { process_->reap(); }

 private:
  std::shared_ptr<FakeProcess> process_;
};

}  // namespace

WorkerSpec workerSpec(int rank) {
  WorkerSpec spec;
  spec.rank = rank;
  spec.localRank = rank;
  spec.launch.executable = "/fake/worker";
  spec.launch.argv = {"worker", std::to_string(rank)};
  spec.stdoutRoute.toConsole = false;
  spec.stderrRoute.toConsole = false;
  spec.stderrRoute.keepTail = true;
  return spec;
}

std::vector<WorkerSpec> workerSpecs(int count) {
  std::vector<WorkerSpec> specs;
  for (int rank = 0; rank < count; ++rank) specs.push_back(workerSpec(rank));
  return specs;
}

int rankOf(const FakeProcess& process) { return std::stoi(process.launch().argv.at(1)); }

FakeProcess::FakeProcess(boost::asio::io_context& context, ProcessLaunch launch, pid_t groupId,
                         boost::asio::readable_pipe& stdoutPipe, boost::asio::readable_pipe& stderrPipe)
    : context_(context), launch_(std::move(launch)), groupId_(groupId), stdout_(context), stderr_(context) {
  boost::asio::connect_pipe(stdoutPipe, stdout_);
  boost::asio::connect_pipe(stderrPipe, stderr_);
}

void FakeProcess::writeStdout(const std::string& text) { boost::asio::write(stdout_, boost::asio::buffer(text)); }

void FakeProcess::writeStderr(const std::string& text) { boost::asio::write(stderr_, boost::asio::buffer(text)); }

void FakeProcess::asyncWaitForEnd(std::function<void(ProcessEnd)> onEnd) {
  onEnd_ = std::move(onEnd);
  if (end_) deliverEnd();
}

void FakeProcess::reap() { reaped_ = true; }

void FakeProcess::signalGroup(int signal) {
  if (reaped_) {
    signalsAfterReap_.push_back(signal);
    return;
  }
  if (end_) {
    signalsAfterEnd_.push_back(signal);
    return;
  }
  signals_.push_back(signal);
  // SIGUSR1 and SIGUSR2 are handled (a checkpoint request); SIGKILL cannot be.
  const bool handled = signal == SIGUSR1 || signal == SIGUSR2 || (ignoresStopSignals && signal != SIGKILL);
  if (!handled) dieBy(signal);
}

void FakeProcess::endWith(ProcessEnd end) {
  if (end_) return;  // a process ends once
  end_ = end;
  if (!keepsOutputOpen) {
    stdout_.close();
    stderr_.close();
  }
  if (onEnd_) deliverEnd();
}

void FakeProcess::deliverEnd() {
  // Like a real child's end: reported from the event loop, never from inside the call
  // (a signal sent by the group) that caused it.
  boost::asio::post(context_, [onEnd = std::move(onEnd_), end = *end_] { onEnd(end); });
  onEnd_ = nullptr;
}

std::unique_ptr<StartedProcess> FakeProcessStarter::start(boost::asio::io_context& context, const ProcessLaunch& launch,
                                                          boost::asio::readable_pipe& stdoutPipe,
                                                          boost::asio::readable_pipe& stderrPipe) {
  const pid_t groupId = kFirstGroupId + static_cast<pid_t>(processes_.size());
  auto process = std::make_shared<FakeProcess>(context, launch, groupId, stdoutPipe, stderrPipe);
  processes_.push_back(process);
  if (onStart) onStart(*process);
  return std::make_unique<Handle>(process);
}

/// A deadline on a FakeClock.
class FakeTimer final : public Timer {
 public:
  explicit FakeTimer(FakeClock& clock) : clock_(clock) { clock_.timers_.push_back(this); }
  ~FakeTimer() override {
    auto& timers = clock_.timers_;
    timers.erase(std::remove(timers.begin(), timers.end(), this), timers.end());
  }

  void expireAfter(std::chrono::milliseconds delay, std::function<void()> onExpiry) override {
    deadline_ = clock_.now() + delay;
    onExpiry_ = std::move(onExpiry);
  }
  void cancel() override { deadline_.reset(); }

  const std::optional<std::chrono::milliseconds>& deadline() const { return deadline_; }
  /// Disarms the timer, then runs its callback (which may arm it again).
  void fire() {
    deadline_.reset();
    std::function<void()> onExpiry = std::move(onExpiry_);
    onExpiry();
  }

 private:
  FakeClock& clock_;
  std::optional<std::chrono::milliseconds> deadline_;
  std::function<void()> onExpiry_;
};

std::unique_ptr<Timer> FakeClock::makeTimer(boost::asio::io_context&) { return std::make_unique<FakeTimer>(*this); }

void FakeClock::advance(std::chrono::milliseconds delay) {
  const std::chrono::milliseconds until = now_ + delay;
  // One timer at a time, looked up again each time: a callback may arm, cancel or destroy timers.
  while (FakeTimer* timer = nextDue(until)) {
    now_ = *timer->deadline();
    timer->fire();
  }
  now_ = until;
}

FakeTimer* FakeClock::nextDue(std::chrono::milliseconds until) const {
  FakeTimer* next = nullptr;
  for (FakeTimer* timer : timers_) {
    if (!timer->deadline() || *timer->deadline() > until) continue;
    if (next == nullptr || *timer->deadline() < *next->deadline()) next = timer;
  }
  return next;
}

}  // namespace pltrun::fake
