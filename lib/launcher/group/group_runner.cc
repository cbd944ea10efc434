#include "launcher/group/group_runner.h"

#include <signal.h>
#include <unistd.h>

#include "launcher/process/descendant_sweep.h"

namespace pltrun {

bool isStopSignal(int signal) { return signal != SIGUSR1 && signal != SIGUSR2; }

std::vector<int> forwardedSignals() {
  std::vector<int> signals;
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) {
    struct sigaction current {};
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    signals.push_back(signal);
  }
  return signals;
}

GroupRunner::GroupRunner(boost::asio::io_context& context)
    : context_(context), signals_(context), reapTimer_(context) {}

void GroupRunner::listen(std::function<void(int)> observer, bool slurmReachesWorkers) {
  observer_ = std::move(observer);
  slurmReachesWorkers_ = slurmReachesWorkers;
  parentPid_ = getppid();
  catchSignals();
  waitForSignal();
  reapAdoptedEverySecond();
}

void GroupRunner::catchSignals() {
  if (catching_) return;
  catching_ = true;
  for (int signal : forwardedSignals()) signals_.add(signal);
}

std::optional<int> GroupRunner::pendingStopSignal() {
  while (auto received = signals_.poll()) {
    if (isStopSignal(received->signal)) return received->signal;
  }
  return std::nullopt;
}

// A worker that starts background processes and ends leaves them to pltrun (the subreaper):
// reaped as they end, not at exit, so that a long job with many restarts keeps no zombies.
void GroupRunner::reapAdoptedEverySecond() {
  reapTimer_.expires_after(std::chrono::seconds(1));
  reapTimer_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    reapAdoptedChildren();
    reapAdoptedEverySecond();
  });
}

void GroupRunner::waitForSignal() {
  signals_.asyncWait([this](const ReceivedSignal& received) {
    const int signal = received.signal;
    // Stopped by the user: at exit, the console gets a second to take what is queued, not
    // as long as a reader that does not read.
    if (isStopSignal(signal)) console_.limitFinalDrain(std::chrono::seconds(1));
    if (observer_) observer_(signal);
    // Slurm's: from a slurmstepd, or from our parent (srun's slurmstepd, whose /proc entry a
    // user may not read where /proc is mounted with hidepid).
    const bool slurmDelivered =
        slurmReachesWorkers_ && (received.sender == parentPid_ || sentBySlurmStepd(received.sender));
    if (current_ != nullptr) current_->handleSignal(signal, slurmDelivered);
    waitForSignal();
  });
}

void GroupRunner::start(WorkerGroup& group, const std::vector<WorkerSpec>& specs) {
  current_ = &group;
  groupDone_ = false;
  group.start(specs, [this] { groupDone_ = true; });
}

GroupOutcome GroupRunner::waitForGroup() {
  runUntil([this] { return groupDone_; });
  GroupOutcome outcome = current_->outcome();
  current_ = nullptr;
  return outcome;
}

GroupOutcome GroupRunner::run(WorkerGroup& group, const std::vector<WorkerSpec>& specs) {
  start(group, specs);
  runUntil([this] { return groupDone_; });
  // What was queued just before the group finished (an expired timer, a signal) runs while
  // the group still exists and still gets signals: nothing of this group may reach the next.
  runPending();
  GroupOutcome outcome = current_->outcome();
  current_ = nullptr;
  return outcome;
}

void GroupRunner::runUntil(const std::function<bool()>& done) {
  while (!done()) {
    context_.restart();
    context_.run_one();
  }
}

void GroupRunner::runPending() {
  context_.restart();
  context_.poll();
}

}  // namespace pltrun
