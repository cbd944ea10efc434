#include "launcher/agent/agent_workers.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "launcher/group/run_events.h"
#include "launcher/metrics/worker_gpus.h"
#include "launcher/net/rendezvous_host.h"
#include "launcher/plan/slurm_signals.h"

namespace pltrun {

namespace {

// A node whose stalled workers all wait in collectives leaves the node of the culprit this
// long to end the round with its name: the stalls of one hang are seen within a heartbeat
// interval and a stack dump of each other.
constexpr std::chrono::milliseconds kUnexplainedStallGrace{3000};

// The metrics' labels: the run id, and the node as blame and status name it (node_name=,
// else the host name).
MetricsIdentity metricsIdentity(const ResolvedJob& job, const std::string& host) {
  return {job.runId, job.config.rdzv.nodeName.empty() ? host : job.config.rdzv.nodeName};
}

}  // namespace

AgentWorkers::AgentWorkers(const ResolvedJob& job, const std::string& host)
    : job_(job),
      host_(host),
      metrics_(metricsIdentity(job, host), MetricsRecorder::Clock::now()),
      directory_(job.config, job.runId, host + "_" + std::to_string(getpid())),
      events_(directory_.eventLog()),
      zygote_(zygoteSettingsFor(plan(), guard_.registrationFd())),
      runtime_(zygote_.runtime()) {
  if (directory_.keepsLogs()) spdlog::info("worker logs go to {}", directory_.root().string());
  events_.write("run_started",
                runStartedFields(job.config, job.runId, directory_.root().string(), host, job.layout.workerCount));
}

AgentWorkers::AgentWorkers(const ResolvedJob& job, const std::string& host, ProcessRuntime runtime)
    : job_(job),
      host_(host),
      metrics_(metricsIdentity(job, host), MetricsRecorder::Clock::now()),
      directory_(job.config, job.runId, host + "_" + std::to_string(getpid())),
      events_(RunFile{}),
      runtime_(runtime) {}

// Created before any round: its listeners open only when this node is rank 0. It listens
// on the address this node joined with (the workers' MASTER_ADDR) when that is a literal
// of this machine; on every interface for a host name (as torch does) or for an address
// this machine does not own (--local-addr behind NAT). Rank 0's worker's port is picked on
// that address (pickFreePort falls back to every interface the same way).
void AgentWorkers::prepareStore(const std::string& joinedAddress) {
  if (job_.config.agentStore) {
    store_ = std::make_unique<AttemptStore>(AttemptStore::Host::Launcher, nodeListenAddress(joinedAddress));
  } else {
    store_ = std::make_unique<AttemptStore>(AttemptStore::Host::RankZeroWorker, joinedAddress);
  }
}

void AgentWorkers::listen(std::function<void(int)> observer) {
  const bool slurmReachesWorkers = slurmSignalsReachWorkers(job_.config.slurmSignalReach, guard_.cgroupProcsFd() >= 0);
  runner_.listen(std::move(observer), slurmReachesWorkers);
}

RunPlan AgentWorkers::plan() const {
  return RunPlan{job_, directory_, host_, &supervision_, fileTimer_ ? fileTimer_->path() : ""};
}

GroupSettings AgentWorkers::groupSettings(int round, const std::vector<WorkerSpec>& specs) {
  GroupSettings group;
  group.attempt = round;
  group.termTimeout = job_.config.termTimeout;
  group.host = host_;
  group.stallTimeout = job_.config.stallTimeout;
  group.stackSignal = supervision_.stackSignal();
  group.unexplainedStallGrace = kUnexplainedStallGrace;
  recordWorkerEvents(group, events_, {{"round", round}});
  // The GPUs only name pltrun_rank_info's labels: NVML is not asked without --metrics.
  recordWorkerMetrics(group, metrics_,
                      identifyWorkers(job_.config.metrics ? gpusOfWorkers(specs) : std::map<int, GpuIdentity>{}));
  return group;
}

std::unique_ptr<WorkerGroup> AgentWorkers::makeGroup(const GroupSettings& settings) {
  auto group = std::make_unique<WorkerGroup>(context_, runner_.console(), guard_, settings, runtime_);
  if (fileTimer_) fileTimer_->serve(group.get());
  return group;
}

void AgentWorkers::releaseGroup() {
  if (fileTimer_) fileTimer_->serve(nullptr);
}

}  // namespace pltrun
