#pragma once
// torchrun's `-r/--redirects` and `-t/--tee` values: which of a worker's standard streams a
// setting applies to, for every local rank ("3") or per local rank ("0:1,1:2").

#include <map>
#include <string>
#include <vector>

namespace pltrun {

/// Bit set over a worker's standard streams, numbered as torchrun numbers them.
enum StreamBits : unsigned { kNoStream = 0, kStdoutBit = 1, kStderrBit = 2, kBothStreams = 3 };

struct StreamSelection {
  unsigned allRanks = kNoStream;    ///< used when perRank is empty
  std::map<int, unsigned> perRank;  ///< when not empty, ranks missing here get kNoStream

  unsigned forLocalRank(int localRank) const;
  bool any() const { return allRanks != kNoStream || !perRank.empty(); }
};

/// Parses "N" (0..3) or "rank:N,rank:N". `flag` names the option in error messages.
StreamSelection parseStreamSelection(const std::string& flag, const std::string& value);

/// Parses `--local-ranks-filter`: a comma-separated list of distinct non-negative ranks.
std::vector<int> parseLocalRanksFilter(const std::string& flag, const std::string& value);

}  // namespace pltrun
