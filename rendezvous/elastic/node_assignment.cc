#include "rendezvous/elastic/node_assignment.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "pltrun/error.h"
#include "rendezvous/elastic/store_json.h"

namespace pltrun::rdzv {

using nlohmann::json;

json toJson(const NodeDescriptor& node) {
  json value = {{"id", node.agentId}, {"host", node.host}, {"addr", node.addr}, {"nproc", node.localWorldSize}};
  if (!node.name.empty()) value["name"] = node.name;
  if (node.rankHint) value["rank_hint"] = *node.rankHint;
  if (node.linkPort != 0) value["link_port"] = node.linkPort;
  if (node.pid != 0) value["pid"] = node.pid;
  if (node.maxNodes != 0) value["nnodes"] = {node.minNodes, node.maxNodes};
  if (node.maxRestarts >= 0) value["max_restarts"] = node.maxRestarts;
  if (node.keepAliveMs != 0) value["keep_alive_ms"] = node.keepAliveMs;
  return value;
}

NodeDescriptor nodeDescriptorFromJson(const std::string& text) {
  const char* what = "node descriptor";
  json value = parseStoreObject(text, what);
  NodeDescriptor node;
  node.agentId = storeField<std::string>(value, "id", what);
  node.host = storeField<std::string>(value, "host", what);
  node.addr = storeField<std::string>(value, "addr", what);
  node.localWorldSize = storeField<int>(value, "nproc", what);
  if (value.contains("name")) node.name = storeField<std::string>(value, "name", what);
  if (value.contains("rank_hint")) node.rankHint = storeField<int>(value, "rank_hint", what);
  if (value.contains("link_port")) node.linkPort = storeField<int>(value, "link_port", what);
  if (value.contains("pid")) node.pid = storeField<int>(value, "pid", what);
  if (value.contains("nnodes")) {
    const auto range = storeField<std::vector<int>>(value, "nnodes", what);
    if (range.size() != 2) throw MalformedJobState("node descriptor with a bad 'nnodes'");
    node.minNodes = range[0];
    node.maxNodes = range[1];
  }
  if (value.contains("max_restarts")) node.maxRestarts = storeField<int>(value, "max_restarts", what);
  if (value.contains("keep_alive_ms")) node.keepAliveMs = storeField<int>(value, "keep_alive_ms", what);
  if (node.localWorldSize < 1) throw MalformedJobState("node descriptor with nproc < 1");
  if (node.linkPort < 0 || node.linkPort > 65535) {
    throw MalformedJobState("node descriptor with a link_port outside 0..65535");
  }
  return node;
}

json toJson(const NodeAssignment& assignment) {
  return {{"node_rank", assignment.nodeRank},
          {"nnodes", assignment.nnodes},
          {"world_size", assignment.worldSize},
          {"first_rank", assignment.firstRank},
          {"rank0_addr", assignment.rank0Addr}};
}

NodeAssignment nodeAssignmentFromJson(const std::string& text) {
  const char* what = "node assignment";
  json value = parseStoreObject(text, what);
  NodeAssignment assignment;
  assignment.nodeRank = storeField<int>(value, "node_rank", what);
  assignment.nnodes = storeField<int>(value, "nnodes", what);
  assignment.worldSize = storeField<int>(value, "world_size", what);
  assignment.firstRank = storeField<int>(value, "first_rank", what);
  assignment.rank0Addr = storeField<std::string>(value, "rank0_addr", what);
  return assignment;
}

namespace {

// True when the hints can all be honoured: each in 0..count-1 and no two alike.
bool hintsAreConsistent(const std::vector<NodeDescriptor>& participants, std::string& problem) {
  const int count = static_cast<int>(participants.size());
  std::set<int> seen;
  for (const NodeDescriptor& node : participants) {
    if (!node.rankHint) continue;
    if (*node.rankHint < 0 || *node.rankHint >= count) {
      problem = node.host + " asked for node rank " + std::to_string(*node.rankHint) + " but only " +
                std::to_string(count) + " nodes joined";
      return false;
    }
    if (!seen.insert(*node.rankHint).second) {
      problem = "two nodes asked for node rank " + std::to_string(*node.rankHint);
      return false;
    }
  }
  return true;
}

}  // namespace

AssignmentResult assignNodeRanks(const std::vector<NodeDescriptor>& participants) {
  const int count = static_cast<int>(participants.size());
  AssignmentResult result;
  std::string problem;
  const bool useHints = hintsAreConsistent(participants, problem);
  if (!useHints) result.warning = "--node-rank hints ignored: " + problem;

  // rankOf[i]: node rank of participant i.
  std::vector<int> rankOf(count, -1);
  std::vector<bool> taken(count, false);
  if (useHints) {
    for (int i = 0; i < count; ++i) {
      if (participants[i].rankHint) {
        rankOf[i] = *participants[i].rankHint;
        taken[rankOf[i]] = true;
      }
    }
  }
  std::vector<int> rest;
  for (int i = 0; i < count; ++i) {
    if (rankOf[i] < 0) rest.push_back(i);
  }
  std::sort(rest.begin(), rest.end(), [&](int a, int b) {
    const NodeDescriptor& left = participants[a];
    const NodeDescriptor& right = participants[b];
    return std::tie(left.addr, left.agentId) < std::tie(right.addr, right.agentId);
  });
  int nextFree = 0;
  for (int index : rest) {
    while (taken[nextFree]) ++nextFree;
    rankOf[index] = nextFree;
    taken[nextFree] = true;
  }

  // Global ranks: prefix sums of the workers of lower node ranks.
  std::vector<int> byRank(count);
  for (int i = 0; i < count; ++i) byRank[rankOf[i]] = i;
  std::vector<int> firstRankOfNode(count, 0);
  int worldSize = 0;
  for (int rank = 0; rank < count; ++rank) {
    firstRankOfNode[rank] = worldSize;
    const int workers = participants[byRank[rank]].localWorldSize;
    if (workers > std::numeric_limits<int>::max() - worldSize) {  // only junk descriptors get here
      throw MalformedJobState("the nodes' worker counts add up past " +
                              std::to_string(std::numeric_limits<int>::max()) + " ranks");
    }
    worldSize += workers;
  }
  const std::string rank0Addr = count > 0 ? participants[byRank[0]].addr : "";
  for (int i = 0; i < count; ++i) {
    result.byParticipant.push_back(NodeAssignment{rankOf[i], count, worldSize, firstRankOfNode[rankOf[i]], rank0Addr});
  }
  return result;
}

}  // namespace pltrun::rdzv
