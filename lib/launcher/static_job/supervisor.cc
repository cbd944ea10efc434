#include "launcher/static_job/supervisor.h"

#include <spdlog/spdlog.h>

#include "launcher/group/group_runner.h"
#include "launcher/group/run_events.h"
#include "launcher/metrics/restart_cause.h"
#include "launcher/metrics/worker_gpus.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {

Supervisor::Supervisor(boost::asio::io_context& context, SupervisorOptions options, OrphanGuard& guard,
                       ProcessRuntime runtime)
    : context_(context), options_(std::move(options)), guard_(guard), runtime_(runtime), events_(options_.eventLog) {}

int Supervisor::run(const AttemptPlanner& planAttempt) {
  GroupRunner runner(context_);
  runner.listen({}, slurmSignalsReachWorkers(options_.slurmSignalReach, guard_.cgroupProcsFd() >= 0));
  const auto started = std::chrono::steady_clock::now();
  events_.write("run_started", options_.runStarted);
  RestartProgress progress(options_.maxNoProgressRestarts);
  for (int attempt = 0;; ++attempt) {
    GroupSettings settings;
    settings.attempt = attempt;
    settings.termTimeout = options_.termTimeout;
    settings.host = options_.host;
    settings.stallTimeout = options_.stallTimeout;
    settings.stackSignal = options_.stackSignal;
    recordWorkerEvents(settings, events_, {{"attempt", attempt}});
    const std::vector<WorkerSpec> specs = planAttempt(attempt);
    if (options_.metrics != nullptr) {
      recordMetrics([attempt](JobMetrics& metrics) { metrics.attemptStarted(attempt, MetricsRecorder::Clock::now()); });
      recordWorkerMetrics(settings, *options_.metrics, identifyWorkers(gpusOfWorkers(specs)));
    }
    WorkerGroup group(context_, runner.console(), guard_, settings, runtime_);
    if (options_.fileTimer != nullptr) options_.fileTimer->serve(&group);
    GroupOutcome outcome = runner.run(group, specs);
    if (options_.fileTimer != nullptr) options_.fileTimer->serve(nullptr);
    const AfterAttempt next = decideAfterAttempt(outcome, attempt, options_.maxRestarts);
    if (next.action == AfterAttempt::Action::Restart && progress.stopAfter(attempt, highestCounter(group.progress()))) {
      return stopWithoutProgress(progress, outcome, attempt);
    }
    if (next.action == AfterAttempt::Action::Restart) {
      recordMetrics([&outcome](JobMetrics& metrics) {
        metrics.restarted(restartCauseOf(*outcome.rootCause), MetricsRecorder::Clock::now());
      });
      events_.write(
          "restart",
          {{"attempt", attempt + 1}, {"rank", outcome.rootCause->rank}, {"reason", outcome.rootCause->describe()}});
      spdlog::warn("restarting the worker group ({} of {} restarts) after rank {} {}", attempt + 1,
                   options_.maxRestarts, outcome.rootCause->rank, outcome.rootCause->describe());
      continue;
    }
    if (next.reportFailure) printFailureReport(*outcome.rootCause, outcome.others, options_.report);
    events_.write("job_finished", {{"status", next.status}, {"attempts", attempt + 1}});
    recordMetrics([](JobMetrics& metrics) { metrics.jobFinished(MetricsRecorder::Clock::now()); });
    if (outcome.kind == GroupOutcome::Kind::Succeeded) {
      std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started;
      spdlog::info(
          "{} succeeded in {:.2f} s{}",
          specs.size() == 1 ? "the worker" : "all " + countedNoun(static_cast<long long>(specs.size()), "worker"),
          elapsed.count(), attempt > 0 ? " after " + std::to_string(attempt) + " restart(s)" : "");
    } else if (outcome.kind == GroupOutcome::Kind::Interrupted) {
      spdlog::warn("stopped by {}", signalName(outcome.interruptSignal));
    }
    return next.status;
  }
}

// The last attempt's failure is reported as when no restart is left, with the verdict in
// failure.json; the verdict's one line comes last, where the console's reader looks.
int Supervisor::stopWithoutProgress(const RestartProgress& progress, const GroupOutcome& outcome, int attempt) {
  nlohmann::json fields = progress.json();
  fields["attempt"] = attempt;
  events_.write("no_progress", fields);
  printFailureReport(*outcome.rootCause, outcome.others, options_.report, {{"no_progress", fields}});
  spdlog::error("{}", progress.line());
  events_.write("job_finished", {{"status", kNoProgressExitStatus}, {"attempts", attempt + 1}});
  recordMetrics([](JobMetrics& metrics) { metrics.jobFinished(MetricsRecorder::Clock::now()); });
  return kNoProgressExitStatus;
}

void Supervisor::recordMetrics(const std::function<void(JobMetrics&)>& update) {
  if (options_.metrics != nullptr) options_.metrics->update(update);
}

AfterAttempt decideAfterAttempt(const GroupOutcome& outcome, int attempt, int maxRestarts) {
  switch (outcome.kind) {
    case GroupOutcome::Kind::Succeeded:
      return AfterAttempt{AfterAttempt::Action::Finish, 0, false};
    case GroupOutcome::Kind::Interrupted:
      return AfterAttempt{AfterAttempt::Action::Finish, 128 + outcome.interruptSignal, outcome.rootCause.has_value()};
    case GroupOutcome::Kind::Failed:
      break;
  }
  if (attempt < maxRestarts) return AfterAttempt{AfterAttempt::Action::Restart, 0, false};
  return AfterAttempt{AfterAttempt::Action::Finish, outcome.rootCause->shellStatus(), true};
}

}  // namespace pltrun
