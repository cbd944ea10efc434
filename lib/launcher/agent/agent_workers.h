#pragma once
// What every round's workers on this node run with, made once for the whole job: the run
// directory and its event log, the supervision files, torch's FileTimer server, the event
// loop and runner every round's worker group runs on, what the workers run on (real
// processes, or the unit tests' fakes), and the workers' store of the rounds where this
// node is rank 0. Each round (round_run.cc) starts its group here; the round loop
// (elastic_agent.cc) writes the job's events and listens to signals through it.

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "launcher/group/attempt_plan.h"
#include "launcher/group/file_timer_server.h"
#include "launcher/group/group_runner.h"
#include "launcher/group/resolved_job.h"
#include "launcher/group/supervision_files.h"
#include "launcher/group/worker_group.h"
#include "launcher/metrics/metrics_recorder.h"
#include "launcher/net/attempt_store.h"
#include "launcher/output/event_log.h"
#include "launcher/output/run_directory.h"
#include "launcher/process/orphan_guard.h"
#include "launcher/process/process_runtime.h"
#include "launcher/process/zygote_starter.h"

namespace pltrun {

class AgentWorkers {
 public:
  /// Opens the run directory of `host`'s agent and its event log, whose first event says
  /// the run started; the workers are real processes.
  AgentWorkers(const ResolvedJob& job, const std::string& host);
  /// For the unit tests: no event log; the workers run on `runtime` (fakes).
  AgentWorkers(const ResolvedJob& job, const std::string& host, ProcessRuntime runtime);

  /// Makes the workers' store, once the address this node joined the rendezvous with is
  /// known (its listeners open only in the rounds where this node is rank 0).
  void prepareStore(const std::string& joinedAddress);
  AttemptStore& store() { return *store_; }

  /// Passes signals to the running workers, and each to `observer`; under Slurm, only
  /// those Slurm does not deliver to the workers itself.
  void listen(std::function<void(int)> observer);
  GroupRunner& runner() { return runner_; }
  boost::asio::io_context& context() { return context_; }
  EventLog& events() { return events_; }
  const RunDirectory& directory() const { return directory_; }

  /// What every round's workers are made from (workerSpecsFor).
  RunPlan plan() const;
  /// The settings of a worker group of `round`, whose workers' starts and ends go to the
  /// event log and, with their heartbeats, to the metrics (`specs`: their GPUs, looked up
  /// once here).
  GroupSettings groupSettings(int round, const std::vector<WorkerSpec>& specs);
  /// What this node's workers did over the job, for --metrics and for `pltrun status` (its
  /// ranks' step times and goodput): kept with or without --metrics.
  MetricsRecorder& metrics() { return metrics_; }
  /// A worker group with `settings`, which torch's FileTimer (when served) watches until
  /// releaseGroup().
  std::unique_ptr<WorkerGroup> makeGroup(const GroupSettings& settings);
  /// The FileTimer lets go of the group, which goes with its round.
  void releaseGroup();

 private:
  const ResolvedJob& job_;
  const std::string host_;
  /// Since the agent started: the job's elapsed seconds, as this node measures them.
  MetricsRecorder metrics_;
  RunDirectory directory_;
  /// Heartbeat sockets, stack files and the Python hook of every round's workers.
  SupervisionFiles supervision_{job_.config.stallTimeout.has_value()};
  /// Before any thread or worker exists; after the directories it removes should the agent
  /// be killed.
  OrphanGuard guard_{temporaryDirectories(directory_, &supervision_)};
  EventLog events_;
  boost::asio::io_context context_;
  /// torch's FileTimer watchdog, when TORCHELASTIC_ENABLE_FILE_TIMER=1.
  std::unique_ptr<FileTimerServer> fileTimer_ = serveFileTimer(job_.config, context_, supervision_.timerFifoPath());
  GroupRunner runner_{context_};
  /// --preload: started with the agent, so it imports while the agent waits to join, and
  /// kept across rounds: every round's workers fork from it. None in unit tests.
  ZygoteRuntime zygote_{std::nullopt};
  ProcessRuntime runtime_ = realProcessRuntime();
  // The workers' store in the rounds where this node is rank 0: hosted by this agent (the
  // agent store), new every round and closed when the round ends, or only its port chosen
  // for rank 0's worker (--no-agent-store).
  std::unique_ptr<AttemptStore> store_;
};

}  // namespace pltrun
