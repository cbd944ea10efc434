#include "launcher/agent/health_gate.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "base/seconds_text.h"
#include "launcher/agent/node_exclusion.h"
#include "launcher/health/job_health.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/store_layout.h"

namespace pltrun {
namespace {

// How often a waiting unhealthy node lets signals in and looks whether the job is over.
constexpr std::chrono::milliseconds kWaitSlice{250};
const std::string kUnhealthyKind = "unhealthy";

}  // namespace

HealthGate::HealthGate(const ResolvedJob& job, RendezvousConnection& connection, EventLog& events)
    : job_(job),
      connection_(connection),
      events_(events),
      enabled_(checksHealthBeforeLaunch(job.config, job.inherited)),
      options_(healthOptionsFor(job.config, job.layout)) {}

std::optional<int> HealthGate::waitUntilHealthy(const std::function<void()>& betweenWaits) {
  if (!enabled_) return std::nullopt;
  for (;;) {
    const NodeHealth health = checkNodeHealth(options_, job_.inherited);
    for (const HealthCheckResult& check : health.checks) spdlog::debug("health check {}", checkLine(check));
    if (health.healthy()) {
      if (excluded_) reportHealthy();
      return std::nullopt;
    }
    reportUnhealthy(health);
    if (waitForRecheck(betweenWaits)) return kUnhealthyAgentStatus;
  }
}

void HealthGate::reportUnhealthy(const NodeHealth& health) {
  const std::string reason = health.reason();
  if (excluded_ && reason == lastReason_) {
    spdlog::debug("still unhealthy: {}", reason);
    return;
  }
  spdlog::error("this node is unhealthy, so it does not join the job: {}; checking again every {} s", reason,
                secondsText(options_.recheckInterval));
  events_.write("node_unhealthy", unhealthyEventFields(connection_.host(), health));
  recordExclusion(true, reason);
  excluded_ = true;
  lastReason_ = reason;
}

void HealthGate::reportHealthy() {
  spdlog::info("this node is healthy again; joining the job");
  events_.write("node_healthy", {{"node", connection_.host()}, {"previous_reason", lastReason_}});
  recordExclusion(false, "its health checks pass");
  excluded_ = false;
  lastReason_.clear();
}

// For `pltrun status`, through the writer blame's exclusions use too (node_exclusion.h):
// one line format, one node name (node_name=, else the host), and a store that refuses it
// still lets the node wait, or join.
void HealthGate::recordExclusion(bool excluded, const std::string& reason) {
  appendExclusion(connection_, {exclusionName(connection_), kUnhealthyKind, excluded, reason, ""});
}

// Sleeps out the interval in slices: signals are handled, and a job that ended meanwhile
// (its closed key set, or its store gone) ends this agent too. Returns whether it did.
bool HealthGate::waitForRecheck(const std::function<void()>& betweenWaits) {
  const auto until = std::chrono::steady_clock::now() + options_.recheckInterval;
  for (;;) {
    betweenWaits();
    if (jobEnded()) return true;
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, kWaitSlice));
  }
}

// The job is over without this node: it never joined since it fell ill, so how the job
// ended is not its status; it stayed out, unhealthy (kUnhealthyAgentStatus). A node that
// hosts the store keeps it until the others have left, as the exit barrier does.
bool HealthGate::jobEnded() {
  try {
    if (!connection_.store().check({connection_.rendezvous().key(rdzv::layout::kClosed)})) return false;
    spdlog::error("the job ended while this node was out of it, unhealthy: {}", lastReason_);
    if (connection_.hostsStore()) {
      const int round =
          static_cast<int>(connection_.store().add(connection_.rendezvous().key(rdzv::layout::kRound), 0));
      connection_.rendezvous().waitForOthersToLeave(round, connection_.rendezvous().membersOf(round),
                                                    connection_.settings().closeTimeout);
    }
  } catch (const Error& error) {
    spdlog::error("the job's store is gone while this node was out of it, unhealthy ({}): {}", error.what(),
                  lastReason_);
  }
  return true;
}

}  // namespace pltrun
