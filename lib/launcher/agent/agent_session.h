#pragma once
// What one elastic agent holds for the whole job, made once before its first round, in two
// parts with one job each: what every round's workers run with (agent_workers.h) and the
// connection to the other nodes (rendezvous_connection.h). The round loop
// (elastic_agent.cc) takes both, and hands each round (round_run.cc) the same two.

#include <functional>
#include <memory>
#include <string>

#include "launcher/agent/agent_workers.h"
#include "launcher/agent/rendezvous_connection.h"
#include "launcher/group/resolved_job.h"
#include "launcher/metrics/metrics_server.h"
#include "launcher/process/process_runtime.h"
#include "pltrun/store.h"

namespace pltrun {

class AgentSession {
 public:
  /// Opens the run directory, hosts the rendezvous store if it is ours, connects to it
  /// (waiting up to read_timeout for its host to come up), and listens to signals. Throws
  /// Error with what to do.
  explicit AgentSession(const ResolvedJob& job);
  /// For the unit tests: a session over `store` (an InMemoryStore; nothing hosted, nothing
  /// connected), whose round watchers use `connectWatcher()` and whose workers run on
  /// `runtime` (fakes).
  AgentSession(const ResolvedJob& job, std::unique_ptr<Store> store,
               std::function<std::unique_ptr<Store>()> connectWatcher, ProcessRuntime runtime);

  const ResolvedJob& job() const { return job_; }
  AgentWorkers& workers() { return workers_; }
  RendezvousConnection& connection() { return connection_; }

 private:
  const ResolvedJob& job_;
  const std::string host_;
  // The workers' part first: its orphan guard exists before any thread, and its event loop
  // outlives the connection's peer links, which run on it.
  AgentWorkers workers_;
  /// --metrics: serving before the agent joins (a port it cannot bind is a warning; see serveMetrics).
  std::unique_ptr<MetricsServer> metricsServer_;
  RendezvousConnection connection_;
};

}  // namespace pltrun
