#include "rendezvous/elastic/store_layout.h"

#include <charconv>

namespace pltrun::rdzv {

std::string jobKeyPrefix(const std::string& runId) { return "pltrun/rdzv/" + runId + "/"; }

namespace layout {
namespace {

std::string ofSlot(int round, const char* name, int slot) {
  return roundPrefix(round) + name + "/" + std::to_string(slot);
}

}  // namespace

std::string roundPrefix(int round) { return "r" + std::to_string(round) + "/"; }
std::string count(int round) { return roundPrefix(round) + "count"; }
std::string slot(int round, int slot) { return ofSlot(round, "slot", slot); }
std::string closing(int round) { return roundPrefix(round) + "closing"; }
std::string assign(int round, int slot) { return ofSlot(round, "assign", slot); }
std::string complete(int round) { return roundPrefix(round) + "complete"; }
std::string missing(int round) { return roundPrefix(round) + "missing"; }
std::string end(int round) { return roundPrefix(round) + "end"; }
std::string beat(int round, int slot) { return ofSlot(round, "beat", slot); }
std::string state(int round, int slot) { return ofSlot(round, "state", slot); }
std::string masterPort(int round) { return roundPrefix(round) + "master_port"; }
std::string done(int round) { return roundPrefix(round) + "done"; }
std::string left(int round) { return roundPrefix(round) + "left"; }

std::optional<int> beatSlot(int round, const std::string& name) {
  const std::string stem = roundPrefix(round) + "beat/";
  if (name.rfind(stem, 0) != 0) return std::nullopt;
  int slot = 0;
  const char* digits = name.data() + stem.size();
  const auto [end, error] = std::from_chars(digits, name.data() + name.size(), slot);
  if (error != std::errc() || end != name.data() + name.size() || slot < 1) return std::nullopt;
  return slot;
}

std::vector<std::string> keysOfRound(int round, int slots) {
  std::vector<std::string> keys = {closing(round), complete(round),   missing(round), end(round),
                                   done(round),    masterPort(round), left(round)};
  for (int index = 1; index <= slots; ++index) {
    for (std::string key : {slot(round, index), assign(round, index), beat(round, index), state(round, index)}) {
      keys.push_back(std::move(key));
    }
  }
  keys.push_back(count(round));
  return keys;
}

}  // namespace layout
}  // namespace pltrun::rdzv
