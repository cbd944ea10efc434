#include "launcher/metrics/metrics_recorder.h"

#include <utility>

#include "launcher/group/worker_group.h"

namespace pltrun {

MetricsRecorder::MetricsRecorder(MetricsIdentity identity, Clock::time_point jobStarted)
    : metrics_(std::move(identity), jobStarted) {}

void MetricsRecorder::update(const std::function<void(JobMetrics&)>& update) {
  const std::lock_guard<std::mutex> lock(mutex_);
  update(metrics_);
}

std::string MetricsRecorder::scrape(Clock::time_point now) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return metrics_.render(now);
}

Goodput MetricsRecorder::goodput(Clock::time_point now) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return metrics_.goodput(now);
}

std::optional<double> MetricsRecorder::stepSeconds(int rank) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return metrics_.stepSeconds(rank);
}

namespace {

WorkerEnd workerEndOf(const ProcessEnd& end, bool stopped) {
  if (end.succeeded()) return WorkerEnd::Succeeded;
  return stopped ? WorkerEnd::Stopped : WorkerEnd::Failed;
}

}  // namespace

// Each observer runs the one set before it first (the event log's), then records.
void recordWorkerMetrics(GroupSettings& group, MetricsRecorder& recorder,
                         std::function<RankIdentity(int rank, int localRank, pid_t pid)> identify) {
  group.onWorkerStarted = [&recorder, identify = std::move(identify), before = std::move(group.onWorkerStarted)](
                              const WorkerSpec& spec, pid_t pid) {
    if (before) before(spec, pid);
    const RankIdentity rank = identify(spec.rank, spec.localRank, pid);
    recorder.update([&](JobMetrics& metrics) { metrics.workerStarted(rank, MetricsRecorder::Clock::now()); });
  };
  group.onWorkerExited = [&recorder, before = std::move(group.onWorkerExited)](const WorkerSpec& spec, pid_t pid,
                                                                               const ProcessEnd& end, bool stopped) {
    if (before) before(spec, pid, end, stopped);
    recorder.update([&](JobMetrics& metrics) {
      metrics.workerEnded(spec.rank, workerEndOf(end, stopped), MetricsRecorder::Clock::now());
    });
  };
  group.onHeartbeat = [&recorder, before = std::move(group.onHeartbeat)](const WorkerSpec& spec,
                                                                         MetricsRecorder::Clock::time_point at,
                                                                         std::optional<long long> counter) {
    if (before) before(spec, at, counter);
    recorder.update([&](JobMetrics& metrics) { metrics.beat(spec.rank, at, counter); });
  };
  group.onStall = [&recorder, before = std::move(group.onStall)](const StallReport& report) {
    if (before) before(report);
    recorder.update([](JobMetrics& metrics) { metrics.stallDetected(); });
  };
}

}  // namespace pltrun
