#include "launcher/agent/node_exclusion.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "launcher/output/event_log.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/store_layout.h"

namespace pltrun {

std::string exclusionName(const RendezvousConnection& connection) {
  const std::string& given = connection.settings().nodeName;
  return given.empty() ? connection.host() : given;
}

void appendExclusion(RendezvousConnection& connection, const rdzv::NodeExclusion& exclusion) {
  try {
    connection.store().append(connection.rendezvous().key(rdzv::layout::kExclusions),
                              rdzv::exclusionLine(exclusion, std::chrono::system_clock::now()));
  } catch (const Error& error) {
    spdlog::warn("could not record in the store that node {} is {}: {}; `pltrun status` will not list it",
                 exclusion.node, exclusion.excluded ? "excluded" : "back", error.what());
  }
}

std::vector<rdzv::NodeExclusion> readExcludedNodes(RendezvousConnection& connection) {
  const std::string key = connection.rendezvous().key(rdzv::layout::kExclusions);
  try {
    if (!connection.store().check({key})) return {};
    return rdzv::excludedNodes(connection.store().get(key, connection.settings().closeTimeout));
  } catch (const Error& error) {
    spdlog::debug("could not read the excluded nodes: {}", error.what());
    return {};
  }
}

bool otherNodesFailed(RendezvousConnection& connection, const rdzv::RoundInfo& info) {
  try {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    for (const rdzv::NodeState& node : connection.rendezvous().readOtherNodesStates(info, deadline)) {
      if (node.state == "failed") return true;
    }
  } catch (const Error& error) {
    spdlog::debug("could not read the other nodes' states: {}", error.what());
  }
  return false;
}

void excludeThisNode(RendezvousConnection& connection, EventLog& events, const std::string& runId,
                     const NodeBlame& blame, int round) {
  const std::string node = exclusionName(connection);
  const std::string reason = blame.reason();
  spdlog::error("node {} is excluded from run {} for the rest of the run: {}; the other nodes go on without it", node,
                runId, reason);
  events.write("node_excluded", {{"node", node}, {"blames", blame.blames()}, {"reason", reason}, {"round", round}});
  appendExclusion(connection, {node, "blamed", true, reason, ""});
}

void reportExcludedNodes(RendezvousConnection& connection, const RunFile& failureReport) {
  const std::vector<rdzv::NodeExclusion> excluded = readExcludedNodes(connection);
  if (excluded.empty()) return;
  for (const rdzv::NodeExclusion& node : excluded) {
    spdlog::error("node {} was kept out of the job ({}): {}", node.node, node.kind, node.reason);
  }
  writeFailureWithoutRootCause(failureReport, {{"excluded_nodes", rdzv::excludedNodesJson(excluded)}});
}

void writeFailureWithoutRootCause(const RunFile& file, const nlohmann::json& fields) {
  if (!file) return;
  nlohmann::json document = {{"schema", kEventSchema}, {"root_cause", nullptr}, {"others", nlohmann::json::array()}};
  document.update(fields);
  file.write(document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace pltrun
