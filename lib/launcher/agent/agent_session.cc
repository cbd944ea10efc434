#include "launcher/agent/agent_session.h"

#include "launcher/metrics/metrics_endpoint.h"
#include "launcher/net/host_identity.h"

namespace pltrun {

AgentSession::AgentSession(const ResolvedJob& job)
    : job_(job),
      host_(localHostName()),
      workers_(job, host_),
      metricsServer_(serveMetrics(job.config.metrics, workers_.metrics())),
      connection_(job, host_, newAgentId(host_), workers_.runner(), workers_.context()) {
  workers_.prepareStore(connection_.joinedAddress());
}

AgentSession::AgentSession(const ResolvedJob& job, std::unique_ptr<Store> store,
                           std::function<std::unique_ptr<Store>()> connectWatcher, ProcessRuntime runtime)
    : job_(job),
      host_(localHostName()),
      workers_(job, host_, runtime),
      connection_(job, host_, newAgentId(host_), std::move(store), std::move(connectWatcher)) {
  workers_.prepareStore(connection_.joinedAddress());
}

}  // namespace pltrun
