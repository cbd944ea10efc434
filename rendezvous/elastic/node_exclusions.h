#pragma once
// The nodes kept out of a job (issue 46), as the store's exclusions key holds them: one JSON
// line appended per change of a node's exclusion, a node's last line its state (store_layout.h).
// Agents append lines; `pltrun status` and a job that fails for want of nodes read them. Pure.

#include <chrono>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace pltrun::rdzv {

struct NodeExclusion {
  std::string node;  ///< the node's name (node_name=, else its host name)
  std::string kind;  ///< "unhealthy" (its health checks fail) or "blamed" (its workers ended rounds)
  bool excluded = true;
  std::string reason;  ///< one line
  std::string time;    ///< ISO 8601, UTC
};

/// `exclusion` as one line of the exclusions key, its newline included; its time is `now`'s.
std::string exclusionLine(NodeExclusion exclusion, std::chrono::system_clock::time_point now);

/// The nodes whose last line in `text` says they are excluded, in the order they were first
/// named. The store's word: a line that is not an exclusion (another program's, or cut) is
/// skipped, and every text is made safe to print within a line.
std::vector<NodeExclusion> excludedNodes(const std::string& text);

/// failure.json's and `pltrun status --json`'s "excluded_nodes": [{"node", "kind", "reason", "time"}].
nlohmann::json excludedNodesJson(const std::vector<NodeExclusion>& nodes);

}  // namespace pltrun::rdzv
