#include "launcher/plan/stream_selection.h"

#include <set>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr const char* kAccepted = "expected 0 (none), 1 (stdout), 2 (stderr), 3 (both), or per local rank like 0:1,1:2";

unsigned parseStreamBits(const std::string& flag, const std::string& value, std::string_view text) {
  auto bits = parseInteger(trimSpaces(text));
  if (!bits || *bits < 0 || *bits > 3) throwInvalidFlag(flag, value, kAccepted);
  return static_cast<unsigned>(*bits);
}

int parseLocalRank(const std::string& flag, const std::string& value, std::string_view text, const char* accepted) {
  auto rank = parseInteger(trimSpaces(text));
  if (!rank || *rank < 0 || *rank > 1'000'000) throwInvalidFlag(flag, value, accepted);
  return static_cast<int>(*rank);
}

}  // namespace

unsigned StreamSelection::forLocalRank(int localRank) const {
  if (perRank.empty()) return allRanks;
  auto found = perRank.find(localRank);
  return found == perRank.end() ? kNoStream : found->second;
}

StreamSelection parseStreamSelection(const std::string& flag, const std::string& value) {
  StreamSelection selection;
  if (value.find(':') == std::string::npos) {
    selection.allRanks = parseStreamBits(flag, value, value);
    return selection;
  }
  for (std::string_view entry : splitText(value, ',')) {
    auto parts = splitText(entry, ':');
    if (parts.size() != 2) throwInvalidFlag(flag, value, kAccepted);
    int rank = parseLocalRank(flag, value, parts[0], kAccepted);
    if (!selection.perRank.emplace(rank, parseStreamBits(flag, value, parts[1])).second) {
      throwInvalidFlag(flag, value, "local rank " + std::to_string(rank) + " is given twice");
    }
  }
  return selection;
}

std::vector<int> parseLocalRanksFilter(const std::string& flag, const std::string& value) {
  constexpr const char* kAcceptedRanks = "expected comma-separated local ranks like 0,2";
  std::vector<int> ranks;
  std::set<int> seen;
  for (std::string_view entry : splitText(value, ',')) {
    int rank = parseLocalRank(flag, value, entry, kAcceptedRanks);
    if (!seen.insert(rank).second) {
      throwInvalidFlag(flag, value, "local rank " + std::to_string(rank) + " is given twice");
    }
    ranks.push_back(rank);
  }
  return ranks;
}

}  // namespace pltrun
