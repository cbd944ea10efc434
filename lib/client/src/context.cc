#include "pltrun/context.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "pltrun/error.h"

namespace pltrun {
namespace {

// The variables that say "a launcher started this process".
constexpr const char* kLauncherVariables[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"};

class EnvironmentReader {
 public:
  explicit EnvironmentReader(const std::function<const char*(const char*)>& lookup) : lookup_(lookup) {}

  /// The integer in `name`, which must be set when `required`; `fallback` otherwise.
  int integer(const char* name, bool required, int fallback, int low, int high) const {
    const char* text = lookup_(name);
    if (text == nullptr) {
      if (required) missing(name);
      return fallback;
    }
    std::string_view view(text);
    int value = 0;
    auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
    if (view.empty() || error != std::errc() || end != view.data() + view.size() || value < low || value > high) {
      throw Error(ErrorCode::InvalidArgument, std::string("environment variable ") + name + "='" + text +
                                                  "' is not valid: expected an integer from " + std::to_string(low) +
                                                  " to " + std::to_string(high));
    }
    return value;
  }

  std::string text(const char* name, bool required, const std::string& fallback = "") const {
    const char* value = lookup_(name);
    if (value == nullptr) {
      if (required) missing(name);
      return fallback;
    }
    return value;
  }

  bool isSet(const char* name) const { return lookup_(name) != nullptr; }

 private:
  [[noreturn]] static void missing(const char* name) {
    throw Error(ErrorCode::InvalidArgument,
                std::string("environment variable ") + name +
                    " is not set, though other launcher variables are: start the program with pltrun (or torchrun), "
                    "or set all of RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT");
  }

  const std::function<const char*(const char*)>& lookup_;
};

}  // namespace

Context Context::fromEnvironment() {
  return fromLookup([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

Context Context::fromLookup(const std::function<const char*(const char*)>& lookup) {
  EnvironmentReader env(lookup);
  Context context;
  for (const char* name : kLauncherVariables) context.launched = context.launched || env.isSet(name);
  if (!context.launched) return context;

  constexpr int kMax = 1 << 24;
  context.worldSize = env.integer("WORLD_SIZE", true, 1, 1, kMax);
  context.rank = env.integer("RANK", true, 0, 0, context.worldSize - 1);
  context.localRank = env.integer("LOCAL_RANK", true, 0, 0, kMax);
  // Lightning-style launchers set NODE_RANK but neither LOCAL_WORLD_SIZE nor
  // GROUP_WORLD_SIZE: derive what is missing instead of contradicting what is set.
  const bool hasLocalWorld = env.isSet("LOCAL_WORLD_SIZE"), hasNodes = env.isSet("GROUP_WORLD_SIZE");
  context.localWorldSize = env.integer("LOCAL_WORLD_SIZE", false, 1, 1, kMax);
  if (hasLocalWorld && context.localRank >= context.localWorldSize) {
    throw Error(ErrorCode::InvalidArgument,
                "environment variable LOCAL_RANK=" + std::to_string(context.localRank) +
                    " is not below LOCAL_WORLD_SIZE=" + std::to_string(context.localWorldSize));
  }
  const char* nodeRankName = env.isSet("GROUP_RANK") ? "GROUP_RANK" : "NODE_RANK";
  context.numNodes = env.integer("GROUP_WORLD_SIZE", false, 1, 1, kMax);
  if (!hasNodes && hasLocalWorld) {
    context.numNodes = (context.worldSize + context.localWorldSize - 1) / context.localWorldSize;
  }
  context.nodeRank = env.integer(nodeRankName, false, 0, 0, (hasNodes ? context.numNodes : context.worldSize) - 1);
  if (!hasNodes) context.numNodes = std::max(context.numNodes, context.nodeRank + 1);
  // Without LOCAL_WORLD_SIZE the count is unknown; at least this rank's slot exists.
  if (!hasLocalWorld) context.localWorldSize = std::max(context.localWorldSize, context.localRank + 1);
  context.restartCount = env.integer("TORCHELASTIC_RESTART_COUNT", false, 0, 0, kMax);
  context.runId = env.text("TORCHELASTIC_RUN_ID", false);
  context.masterAddr = env.text("MASTER_ADDR", true);
  context.masterPort = env.integer("MASTER_PORT", true, 0, 1, 65535);
  std::string agentStore = env.text("TORCHELASTIC_USE_AGENT_STORE", false, "False");
  context.agentStore = agentStore == "True" || agentStore == "true" || agentStore == "1";
  return context;
}

}  // namespace pltrun
