#include "rendezvous/elastic/node_state.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace pltrun::rdzv {
namespace {

using nlohmann::json;

// A number of seconds from the store: finite and from 0 up, else absent.
std::optional<double> seconds(const json& object, const char* name) {
  const auto field = object.find(name);
  if (field == object.end() || !field->is_number()) return std::nullopt;
  const double value = field->get<double>();
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  return value;
}

// A value that went through a store may be anything: -1, 1e300, "5", a nested array.
std::optional<RankProgress> decodeRank(const json& entry) {
  if (!entry.is_object()) return std::nullopt;
  const auto rank = entry.find("rank");
  if (rank == entry.end() || !rank->is_number_integer()) return std::nullopt;
  const long long value = rank->get<long long>();
  if (value < 0 || value > std::numeric_limits<int>::max()) return std::nullopt;
  RankProgress progress;
  progress.rank = static_cast<int>(value);
  const auto step = entry.find("step");
  if (step != entry.end() && step->is_number_integer()) progress.step = step->get<long long>();
  progress.silentSeconds = seconds(entry, "silent");
  progress.stepSeconds = seconds(entry, "step_s");
  return progress;
}

// All three or nothing: a goodput with a part missing or out of range is another program's.
std::optional<NodeGoodput> decodeGoodput(const json& value) {
  const auto goodput = value.find("goodput");
  if (goodput == value.end() || !goodput->is_object()) return std::nullopt;
  const auto productive = seconds(*goodput, "productive_s");
  const auto elapsed = seconds(*goodput, "elapsed_s");
  const auto lost = seconds(*goodput, "lost_s");
  if (!productive || !elapsed || !lost) return std::nullopt;
  return NodeGoodput{*productive, *elapsed, *lost};
}

}  // namespace

std::string encodeNodeState(const NodeState& state) {
  json value = {{"state", state.state}, {"workers", state.workers}};
  if (!state.host.empty()) value["host"] = state.host;
  for (const RankProgress& rank : state.ranks) {
    json entry = {{"rank", rank.rank},
                  {"step", rank.step ? json(*rank.step) : json()},
                  {"silent", rank.silentSeconds ? json(*rank.silentSeconds) : json()}};
    if (rank.stepSeconds) entry["step_s"] = *rank.stepSeconds;
    value["ranks"].push_back(entry);
  }
  if (state.goodput) {
    value["goodput"] = {{"productive_s", state.goodput->productiveSeconds},
                        {"elapsed_s", state.goodput->elapsedSeconds},
                        {"lost_s", state.goodput->lostSeconds}};
  }
  // Host names are the agents' own, but a replacement character beats an exception here.
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<NodeState> decodeNodeState(const std::string& text) {
  // The depth of what the parser keeps is bounded by the shape asked for below, but the
  // parser itself recurses: a store value is capped in size by the store, and nlohmann's
  // parser (unlike its dump) is iterative, so a deep value costs memory, not the stack.
  const json value = json::parse(text, nullptr, false);
  if (!value.is_object()) return std::nullopt;
  const auto state = value.find("state");
  if (state == value.end() || !state->is_string() || state->get<std::string>().empty()) return std::nullopt;
  NodeState decoded;
  decoded.state = state->get<std::string>();
  // A worker count is pltrun's word on the node (pltrun status shows it): one that is not a
  // count makes the whole value another program's.
  const auto workers = value.find("workers");
  if (workers != value.end()) {
    if (!workers->is_number_integer()) return std::nullopt;
    const long long count = workers->get<long long>();
    if (count < -1 || count > std::numeric_limits<int>::max()) return std::nullopt;  // -1: not said
    decoded.workers = static_cast<int>(count);
  }
  const auto host = value.find("host");
  if (host != value.end() && host->is_string()) decoded.host = host->get<std::string>();
  const auto ranks = value.find("ranks");
  if (ranks != value.end() && ranks->is_array()) {
    for (const json& entry : *ranks) {
      if (auto rank = decodeRank(entry)) decoded.ranks.push_back(*rank);
    }
  }
  decoded.goodput = decodeGoodput(value);
  return decoded;
}

}  // namespace pltrun::rdzv
