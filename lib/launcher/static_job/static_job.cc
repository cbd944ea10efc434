#include "launcher/static_job/static_job.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <memory>
#include <optional>

#include "launcher/group/attempt_plan.h"
#include "launcher/group/file_timer_server.h"
#include "launcher/group/run_events.h"
#include "launcher/metrics/metrics_endpoint.h"
#include "launcher/net/attempt_store.h"
#include "launcher/net/host_identity.h"
#include "launcher/output/run_directory.h"
#include "launcher/process/orphan_guard.h"
#include "launcher/process/zygote_starter.h"
#include "launcher/static_job/static_health.h"
#include "launcher/static_job/supervisor.h"

namespace pltrun {

namespace {

// A static job's attempts. With the agent store (single node), the launcher hosts the
// workers' store, new for every attempt (attempt_store.h): no worker opens a port, nothing
// collides on MASTER_PORT, and no attempt sees another's keys. Otherwise rank 0's worker
// hosts it, as under torchrun, on a port no earlier attempt used unless --master-port
// fixes it.
class StaticAttempts {
 public:
  explicit StaticAttempts(const RunPlan& plan)
      : plan_(plan),
        workersStore_(plan.job.config.agentStore && plan.job.config.nnodes == 1 ? AttemptStore::Host::Launcher
                                                                                : AttemptStore::Host::RankZeroWorker,
                      plan.job.config.masterAddr, plan.job.config.masterPort) {}

  std::vector<WorkerSpec> workersOf(int attempt) {
    NodePlacement node = staticPlacement(plan_.job.config);
    node.useAgentStore = workersStore_.hostedHere();
    node.masterPort = workersStore_.openNext();
    return workerSpecsFor(plan_, attempt, node);
  }

 private:
  const RunPlan& plan_;
  AttemptStore workersStore_;
};

}  // namespace

// A static job on this node: its run directory, the supervision files where something
// reads them, and the supervisor's attempts.
int runStaticJob(const ResolvedJob& job) {
  const LaunchConfig& config = job.config;
  const WorkerLayout& layout = job.layout;
  // Several nodes of one static job share the run id ("none" by default): each keeps its
  // logs apart as an elastic agent does, by host and pid (several "nodes" may run on one
  // machine into one --log-dir, and a rerun must not write over the last run's logs).
  const RunDirectory directory(config, job.runId,
                               config.nnodes > 1 ? localHostName() + "_" + std::to_string(getpid()) : "");
  if (const std::optional<int> refused = refuseIfUnhealthy(job, directory, localHostName())) return *refused;
  // Heartbeat sockets only where something reads them: on one node that is --stall-timeout,
  // --metrics, and restarts that --max-no-progress-restarts watches (binding them is a
  // visible part of a launch; docs/PERFORMANCE.md, launch); an elastic agent's also feed
  // pltrun status.
  std::optional<SupervisionFiles> supervision;
  const bool watchesProgress = config.maxRestarts > 0 && config.maxNoProgressRestarts > 0;
  if (config.stallTimeout || config.fileTimer || watchesProgress || config.metrics) {
    supervision.emplace(config.stallTimeout.has_value());
  }
  // Before any worker exists; after the directories it removes should pltrun be killed.
  OrphanGuard guard(temporaryDirectories(directory, supervision ? &*supervision : nullptr));
  boost::asio::io_context context;
  // --metrics: serving before anything starts (a port it cannot bind is a warning; see serveMetrics).
  std::optional<MetricsRecorder> metrics;
  if (config.metrics) metrics.emplace(metricsIdentity(job, localHostName()), MetricsRecorder::Clock::now());
  const std::unique_ptr<MetricsServer> metricsServer = metrics ? serveMetrics(config.metrics, *metrics) : nullptr;

  if (setsOmpNumThreads(job.inherited, layout.workerCount)) {
    spdlog::info("OMP_NUM_THREADS=1 for each of the {} workers so they do not overload the CPUs; set it to tune",
                 layout.workerCount);
  }
  if (directory.keepsLogs()) spdlog::info("worker logs go to {}", directory.root().string());

  std::unique_ptr<FileTimerServer> fileTimer =
      supervision ? serveFileTimer(config, context, supervision->timerFifoPath()) : nullptr;
  const RunPlan plan{job, directory, localHostName(), supervision ? &*supervision : nullptr,
                     fileTimer ? fileTimer->path() : ""};
  // --preload: the zygote imports while pltrun prepares the first attempt.
  const ZygoteRuntime zygote(zygoteSettingsFor(plan, guard.registrationFd()));
  StaticAttempts attempts(plan);
  SupervisorOptions options;
  options.maxRestarts = config.maxRestarts;
  options.maxNoProgressRestarts = config.maxNoProgressRestarts;
  options.termTimeout = config.termTimeout;
  options.host = plan.host;
  options.report = directory.failureReport();
  options.slurmSignalReach = config.slurmSignalReach;
  options.stallTimeout = config.stallTimeout;
  options.stackSignal = supervision ? supervision->stackSignal() : 0;
  options.fileTimer = fileTimer.get();
  options.eventLog = directory.eventLog();
  options.metrics = metrics ? &*metrics : nullptr;
  options.runStarted = runStartedFields(config, job.runId, directory.root().string(), plan.host, layout.workerCount);
  return Supervisor(context, options, guard, zygote.runtime()).run([&attempts](int attempt) {
    return attempts.workersOf(attempt);
  });
}

}  // namespace pltrun
