#include "rendezvous/elastic/node_exclusions.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "base/terminal_text.h"
#include "base/utc_time_text.h"

namespace pltrun::rdzv {

namespace {

bool isKind(const std::string& kind) { return kind == "unhealthy" || kind == "blamed"; }

// One line read back; none when it is not an exclusion as agents write them.
std::optional<NodeExclusion> parseLine(const std::string& line) {
  const nlohmann::json value = nlohmann::json::parse(line, nullptr, false);
  if (!value.is_object()) return std::nullopt;
  const auto node = value.find("node");
  const auto kind = value.find("kind");
  const auto excluded = value.find("excluded");
  if (node == value.end() || !node->is_string() || node->get<std::string>().empty()) return std::nullopt;
  if (kind == value.end() || !kind->is_string() || !isKind(kind->get<std::string>())) return std::nullopt;
  if (excluded == value.end() || !excluded->is_boolean()) return std::nullopt;
  NodeExclusion exclusion;
  exclusion.node = terminalSafeLine(node->get<std::string>());
  exclusion.kind = kind->get<std::string>();
  exclusion.excluded = excluded->get<bool>();
  const auto reason = value.find("reason");
  if (reason != value.end() && reason->is_string()) exclusion.reason = terminalSafeLine(reason->get<std::string>());
  const auto time = value.find("time");
  if (time != value.end() && time->is_string()) exclusion.time = terminalSafeLine(time->get<std::string>());
  return exclusion;
}

}  // namespace

std::string exclusionLine(NodeExclusion exclusion, std::chrono::system_clock::time_point now) {
  const nlohmann::json value = {{"node", exclusion.node},
                                {"kind", exclusion.kind},
                                {"excluded", exclusion.excluded},
                                {"reason", exclusion.reason},
                                {"time", utcTimeText(now)}};
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::vector<NodeExclusion> excludedNodes(const std::string& text) {
  std::vector<NodeExclusion> latest;  // each node's last line, in the order first named
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::optional<NodeExclusion> exclusion = parseLine(line);
    if (!exclusion) continue;
    auto same = std::find_if(latest.begin(), latest.end(),
                             [&](const NodeExclusion& known) { return known.node == exclusion->node; });
    if (same == latest.end()) {
      latest.push_back(std::move(*exclusion));
    } else {
      *same = std::move(*exclusion);
    }
  }
  latest.erase(std::remove_if(latest.begin(), latest.end(), [](const NodeExclusion& node) { return !node.excluded; }),
               latest.end());
  return latest;
}

nlohmann::json excludedNodesJson(const std::vector<NodeExclusion>& nodes) {
  nlohmann::json list = nlohmann::json::array();
  for (const NodeExclusion& node : nodes) {
    list.push_back({{"node", node.node}, {"kind", node.kind}, {"reason", node.reason}, {"time", node.time}});
  }
  return list;
}

}  // namespace pltrun::rdzv
