#include "launcher/group/worker_group.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "base/terminal_text.h"
#include "launcher/group/group_runner.h"
#include "launcher/process/process_stat.h"
#include "launcher/stall/stack_sampler.h"

namespace pltrun {
namespace {

constexpr size_t kStderrTailLines = 20;

std::string rankLabel(const WorkerSpec& spec) {
  return spec.label.empty() ? "rank " + std::to_string(spec.rank) : spec.label;
}

}  // namespace

struct WorkerGroup::Worker {
  size_t index = 0;
  WorkerSpec spec;
  std::unique_ptr<OutputStream> stdoutStream;
  std::unique_ptr<OutputStream> stderrStream;
  std::unique_ptr<StartedProcess> process;
  pid_t pid = 0;
  std::optional<ProcessEnd> end;
  std::chrono::system_clock::time_point endTime;
  bool retired = false;          ///< its group killed and forgotten, the leader reaped
  std::string expiredTimer;      ///< torch's FileTimer killed it
  std::vector<int> stopSignals;  ///< the stop signals it was sent (or Slurm sent it) while running
};

WorkerGroup::WorkerGroup(boost::asio::io_context& context, ConsoleWriter& console, OrphanGuard& guard,
                         GroupSettings settings, ProcessRuntime runtime)
    : context_(context),
      console_(console),
      guard_(guard),
      settings_(std::move(settings)),
      runtime_(runtime),
      killTimer_(runtime.timers.makeTimer(context)),
      drainTimer_(runtime.timers.makeTimer(context)),
      failureTimer_(runtime.timers.makeTimer(context)),
      stallGraceTimer_(runtime.timers.makeTimer(context)) {}

WorkerGroup::~WorkerGroup() {
  // Normally finish() has run and every worker is retired. On an error path those still
  // running are retired here: killed, forgotten by the guard, reaped.
  if (finished_) return;
  for (auto& worker : workers_) {
    if (worker->process) retire(*worker);
  }
}

void WorkerGroup::retire(Worker& worker) {
  if (worker.retired) return;
  worker.retired = true;
  // What is left in the group is killed while the ended (or now killed) leader still pins
  // the group id; the guard forgets the id; only then is the leader reaped and the id free.
  worker.process->signalGroup(SIGKILL);
  guard_.forgetGroup(worker.process->groupId());
  worker.process->reap();
}

void WorkerGroup::start(const std::vector<WorkerSpec>& specs, std::function<void()> onDone) {
  onDone_ = std::move(onDone);
  monitor_ = std::make_unique<StallMonitor>(context_, runtime_.timers.makeTimer(context_),
                                            runtime_.timers.makeTimer(context_), settings_.stallTimeout, specs.size());
  for (size_t index = 0; index < specs.size(); ++index) {
    if (!specs[index].heartbeatPath.empty()) monitor_->bind(index, specs[index].heartbeatPath);
  }
  for (const WorkerSpec& spec : specs) {
    auto worker = std::make_unique<Worker>();
    worker->index = workers_.size();
    worker->spec = spec;
    worker->stdoutStream = std::make_unique<OutputStream>(context_, spec.consolePrefix, spec.stdoutRoute, console_);
    worker->stderrStream = std::make_unique<OutputStream>(context_, spec.consolePrefix, spec.stderrRoute, console_);
    ProcessLaunch launch = spec.launch;
    launch.guardFd = guard_.registrationFd();
    launch.cgroupProcsFd = guard_.cgroupProcsFd();
    worker->process =
        runtime_.starter.start(context_, launch, worker->stdoutStream->pipe(), worker->stderrStream->pipe());
    worker->pid = worker->process->groupId();
    guard_.watchGroup(worker->process->groupId());
    workers_.push_back(std::move(worker));
  }
  running_ = workers_.size();
  openStreams_ = 2 * workers_.size();
  for (auto& worker : workers_) {
    Worker* raw = worker.get();
    if (settings_.onWorkerStarted) settings_.onWorkerStarted(raw->spec, raw->pid);
    raw->process->asyncWaitForEnd([this, raw](ProcessEnd end) { onWorkerEnd(*raw, end); });
    raw->stdoutStream->start([this] { onStreamEnd(); });
    raw->stderrStream->start([this] { onStreamEnd(); });
  }
  StallMonitor::OnBeat onBeat;
  if (settings_.onHeartbeat) {
    onBeat = [this](size_t index, std::chrono::steady_clock::time_point at, std::optional<long long> counter) {
      settings_.onHeartbeat(workers_[index]->spec, at, counter);
    };
  }
  monitor_->start([this](const std::vector<size_t>& stalled) { onStall(stalled); }, std::move(onBeat));
}

void WorkerGroup::onWorkerEnd(Worker& worker, ProcessEnd end) {
  worker.end = end;
  worker.endTime = std::chrono::system_clock::now();
  --running_;
  monitor_->ended(worker.index);
  if (settings_.onWorkerExited) {
    settings_.onWorkerExited(worker.spec, worker.pid, end, endedByStopSignal(end, worker.stopSignals));
  }
  if (!end.succeeded() && !stopping_ && rootCause_ == nullptr) {
    std::string what = "ended with " + end.describe();
    if (!worker.expiredTimer.empty()) what += " (" + worker.expiredTimer + ")";
    spdlog::warn("{} (pid {}) {}{}", rankLabel(worker.spec), worker.pid, what,
                 running_ > 0 ? "; stopping the other workers" : "");
    becomeRootCause(worker, RootCauseNotice{what, end.shellStatus(), {}});
    if (settings_.stopDelayAfterFailure.count() > 0) {
      failureTimer_->expireAfter(settings_.stopDelayAfterFailure, [this] {
        if (finished_ || running_ == 0 || stopping_) return;
        stopRunningWorkers(SIGTERM);
      });
    } else {
      stopRunningWorkers(SIGTERM);
    }
  }
  if (running_ == 0) afterAllEnded();
}

void WorkerGroup::becomeRootCause(Worker& worker, RootCauseNotice notice) {
  rootCause_ = &worker;
  if (!settings_.onRootCause) return;
  WorkerFailure& failure = notice.failure;
  failure.rank = worker.spec.rank;
  failure.localRank = worker.spec.localRank;
  failure.attempt = settings_.attempt;
  failure.host = settings_.host;
  failure.pid = worker.pid;
  if (worker.end) failure.end = *worker.end;
  failure.time = worker.endTime;
  failure.expiredTimer = worker.expiredTimer;
  failure.stall = stallReport_;
  settings_.onRootCause(worker.spec, worker.pid, notice);
}

// Ranks stopped sending heartbeats. Before anything is stopped: where every running worker
// is, read off the event loop (which meanwhile reads heartbeats and watches the workers) within
// kStackSampleDeadline, whatever state the workers are in; then reportStall.
void WorkerGroup::onStall(const std::vector<size_t>& stalled) {
  if (!canReportStall()) return;
  std::vector<StackTarget> targets;
  std::vector<size_t> sampled;
  for (auto& worker : workers_) {
    if (worker->end) continue;
    sampled.push_back(worker->index);
    targets.push_back(StackTarget{worker->pid, worker->spec.stackFile});
  }
  stackSampling_ = std::make_unique<StackSampling>(
      runtime_.timers.makeTimer(context_), targets, settings_.stackSignal, kStackSampleDeadline,
      [this, stalled, sampled](const std::vector<StackSample>& stacks) { reportStall(stalled, sampled, stacks); });
}

// Nothing has overtaken the stall: no worker failed first (that failure is then the root
// cause), no stop signal came, some worker still runs.
bool WorkerGroup::canReportStall() const { return !finished_ && !stopping_ && rootCause_ == nullptr && running_ > 0; }

// Which rank caused it, and the report on the console and to the observers. Then it is a
// failure like any other, with the culprit (or the first stalled worker) as its root cause.
void WorkerGroup::reportStall(const std::vector<size_t>& stalled, const std::vector<size_t>& sampled,
                              const std::vector<StackSample>& stacks) {
  if (!canReportStall()) return;
  StallReport report = diagnoseStall(stalled, sampled, stacks);
  console_.write(terminalSafe(report.text()), true);  // stacks name the workers' files
  if (settings_.onStall) settings_.onStall(report);
  const bool allWaiting = std::all_of(report.ranks.begin(), report.ranks.end(), [](const RankEvidence& rank) {
    return rank.onOtherNode || rank.stack.inCollective;
  });
  if (allWaiting && settings_.unexplainedStallGrace.count() > 0) {
    spdlog::warn(
        "every worker here waits in a collective: the culprit is on another node; ending the round in {} s "
        "unless that node does first",
        settings_.unexplainedStallGrace.count() / 1000.0);
    stallGraceTimer_->expireAfter(settings_.unexplainedStallGrace, [this, report, first = stalled.front()] {
      if (!canReportStall()) return;
      stopForStall(report, first);
    });
    return;
  }
  stopForStall(report, stalled.front());
}

void WorkerGroup::stopForStall(const StallReport& report, size_t firstStalled) {
  Worker* culprit = workers_.at(firstStalled).get();
  for (const auto& worker : workers_) {
    const auto& culprits = report.verdict.culprits;
    if (!worker->end && std::find(culprits.begin(), culprits.end(), worker->spec.rank) != culprits.end()) {
      culprit = worker.get();
      break;
    }
  }
  spdlog::warn("stopping the workers after the stall reported above");
  stallReport_ = report;
  becomeRootCause(*culprit, RootCauseNotice{"stalled: " + report.summary(), kStalledExitStatus, {}});
  stopRunningWorkers(SIGTERM);
  // A stopped worker (SIGSTOP) acts on SIGTERM only once it runs again.
  signalRunningWorkers(SIGCONT);
}

// The evidence of every worker sampled that still runs, as of now: its heartbeat age then
// counts the time the stacks took, and the heartbeats read meanwhile. A worker the monitor
// reported stays stalled in it even if it beat again while its stack was read.
StallReport WorkerGroup::diagnoseStall(const std::vector<size_t>& stalled, const std::vector<size_t>& sampled,
                                       const std::vector<StackSample>& stacks) {
  StallReport report;
  report.attempt = settings_.attempt;
  report.host = settings_.host;
  report.timeoutText = monitor_->timeoutText();
  if (const auto inForce = monitor_->timeoutInForce()) report.timeoutSeconds = inForce->count();
  for (size_t position = 0; position < sampled.size(); ++position) {
    const Worker& worker = *workers_.at(sampled[position]);
    if (worker.end) continue;
    RankEvidence evidence = monitor_->progressEvidence(worker.index);
    evidence.stalled = evidence.stalled || std::find(stalled.begin(), stalled.end(), worker.index) != stalled.end();
    evidence.rank = worker.spec.rank;
    evidence.host = settings_.host;
    evidence.pid = worker.pid;
    evidence.stack = stacks.at(position);
    report.ranks.push_back(evidence);
  }
  if (settings_.otherNodesProgress) {
    for (RankEvidence& other : settings_.otherNodesProgress()) report.ranks.push_back(std::move(other));
  }
  report.verdict = judgeStall(report.ranks);
  return report;
}

std::optional<int> WorkerGroup::rankOfProcess(pid_t pid) const {
  // A worker, a process of its group, or one that left the group (setsid) found by walking
  // up its parents; pltrun itself (the subreaper of orphans) or init ends the walk.
  constexpr int kMostGenerations = 64;
  const pid_t self = getpid();
  for (int generation = 0; generation < kMostGenerations && pid > 1 && pid != self; ++generation) {
    const pid_t group = getpgid(pid);
    for (const auto& worker : workers_) {
      if (!worker->end && (worker->pid == pid || worker->pid == group)) return worker->spec.rank;
    }
    const std::optional<pid_t> parent = parentOf(pid);
    if (!parent) break;
    pid = *parent;
  }
  return std::nullopt;
}

void WorkerGroup::noteExpiredTimer(int rank, const std::string& what) {
  for (auto& worker : workers_) {
    if (worker->spec.rank == rank && !worker->end) worker->expiredTimer = what;
  }
}

std::vector<RankEvidence> WorkerGroup::progress() const {
  std::vector<RankEvidence> ranks;
  for (const auto& worker : workers_) {
    RankEvidence evidence = monitor_->progressEvidence(worker->index);
    evidence.rank = worker->spec.rank;
    evidence.host = settings_.host;
    evidence.pid = worker->pid;
    ranks.push_back(evidence);
  }
  return ranks;
}

void WorkerGroup::handleSignal(int signal, bool workersHaveIt) {
  if (!isStopSignal(signal)) {
    if (workersHaveIt) {
      spdlog::info("received {} from Slurm, which delivered it to the workers as well: not forwarded",
                   signalName(signal));
    } else {
      signalRunningWorkers(signal);
    }
    return;
  }
  // Remembered even when every worker has ended or the group is already stopping after a
  // failure: an interrupted job is neither restarted nor reported as a success.
  const bool repeated = interruptSignal_ != 0;
  if (!repeated) interruptSignal_ = signal;
  if (running_ == 0) return;
  if (repeated) {
    spdlog::warn("received {} again: killing the workers now", signalName(signal));
    killRunningWorkers();
    return;
  }
  const int forwarded = workersHaveIt ? 0 : signal;  // 0: Slurm has sent it to them already
  if (workersHaveIt) noteStopSignal(signal);
  if (stopping_) {
    // Already stopping after a failure: pass the signal on, keep the grace period running.
    spdlog::warn("received {}: {} the workers, which are already being stopped", signalName(signal),
                 workersHaveIt ? "Slurm delivered it to" : "forwarded to");
    if (forwarded != 0) signalRunningWorkers(forwarded);
    return;
  }
  spdlog::warn("received {}: {} the workers, SIGKILL in {} s (repeat the signal to kill now)", signalName(signal),
               workersHaveIt ? "Slurm delivered it to" : "forwarded to", settings_.termTimeout.count() / 1000.0);
  stopRunningWorkers(forwarded);
}

void WorkerGroup::stop() {
  if (running_ == 0 || stopping_) return;
  stopRunningWorkers(SIGTERM);
}

void WorkerGroup::kill() {
  if (running_ == 0) return;
  stopping_ = true;
  if (monitor_) monitor_->stopChecking();
  killRunningWorkers();
}

void WorkerGroup::stopRunningWorkers(int signal) {
  stopping_ = true;
  if (monitor_) monitor_->stopChecking();
  if (signal != 0) signalRunningWorkers(signal);
  killTimer_->expireAfter(settings_.termTimeout, [this] {
    // The deadline passed just as the last worker ended: the cancel came too late.
    if (finished_ || running_ == 0) return;
    spdlog::warn("workers still running {} s after being told to stop: sending SIGKILL",
                 settings_.termTimeout.count() / 1000.0);
    killRunningWorkers();
  });
}

void WorkerGroup::killRunningWorkers() { signalRunningWorkers(SIGKILL); }

void WorkerGroup::signalRunningWorkers(int signal) {
  noteStopSignal(signal);
  for (auto& worker : workers_) {
    if (!worker->end) worker->process->signalGroup(signal);
  }
}

// A worker that ends by a stop signal it was sent was stopped: the failure report does not
// list it among the failures (endedByStopSignal).
void WorkerGroup::noteStopSignal(int signal) {
  if (signal != SIGKILL && !isStopSignal(signal)) return;
  for (auto& worker : workers_) {
    if (!worker->end) worker->stopSignals.push_back(signal);
  }
}

void WorkerGroup::afterAllEnded() {
  monitor_->readQueued();  // a worker's last heartbeats, sent just before it ended
  killTimer_->cancel();
  failureTimer_->cancel();
  stallGraceTimer_->cancel();
  // Whatever is left in a worker's process group has lost its leader: an orphan. Kill it,
  // so nothing a worker started outlives the attempt.
  for (auto& worker : workers_) retire(*worker);
  // And what left those groups (setsid, a new session): in the job's cgroup, if it has one.
  guard_.killStragglers();
  // The group's end, and so a restart or pltrun's exit, never waits on a slow console.
  for (auto& worker : workers_) {
    worker->stdoutStream->unthrottle();
    worker->stderrStream->unthrottle();
  }
  if (openStreams_ == 0) {
    finish();
    return;
  }
  drainTimer_->expireAfter(kDrainTimeout, [this] {
    if (finished_) return;
    spdlog::warn("a process that left its worker's process group still holds its output open; not waiting for it");
    for (auto& worker : workers_) {
      worker->stdoutStream->abandon();
      worker->stderrStream->abandon();
    }
  });
}

void WorkerGroup::onStreamEnd() {
  --openStreams_;
  if (openStreams_ == 0 && running_ == 0) finish();
}

void WorkerGroup::finish() {
  if (finished_) return;
  finished_ = true;
  drainTimer_->cancel();
  if (onDone_) onDone_();
}

WorkerFailure WorkerGroup::describeFailure(const Worker& worker) const {
  WorkerFailure failure;
  failure.rank = worker.spec.rank;
  failure.localRank = worker.spec.localRank;
  failure.attempt = settings_.attempt;
  failure.host = settings_.host;
  failure.pid = worker.pid;
  failure.end = *worker.end;
  failure.time = worker.endTime;
  failure.recorded = readErrorFile(worker.spec.errorFile);
  if (worker.spec.errorFile.exists()) failure.errorFile = worker.spec.errorFile.path();
  failure.expiredTimer = worker.expiredTimer;
  if (&worker == rootCause_) failure.stall = stallReport_;
  if (!failure.recorded) failure.stderrTail = worker.stderrStream->lastLines(kStderrTailLines);
  return failure;
}

GroupOutcome WorkerGroup::outcome() const {
  GroupOutcome outcome;
  if (rootCause_ != nullptr) {
    outcome.kind = GroupOutcome::Kind::Failed;
    outcome.rootCause = describeFailure(*rootCause_);
  }
  if (interruptSignal_ != 0) {
    outcome.kind = GroupOutcome::Kind::Interrupted;
    outcome.interruptSignal = interruptSignal_;
  }
  for (const auto& worker : workers_) {
    if (worker.get() != rootCause_ && worker->end && !worker->end->succeeded() &&
        !endedByStopSignal(*worker->end, worker->stopSignals)) {
      outcome.others.push_back(describeFailure(*worker));
    }
  }
  return outcome;
}

}  // namespace pltrun
