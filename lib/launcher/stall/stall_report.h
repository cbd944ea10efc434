#pragma once
// What pltrun says when ranks stall: the verdict (stall_verdict.h) and every rank's
// evidence, as text for the console and as JSON for failure.json and events.jsonl.

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launcher/stall/stall_verdict.h"

namespace pltrun {

struct StallReport {
  int attempt = 0;
  std::string host;
  std::string timeoutText;               ///< "4.0 s" or "auto (60.0 s)"
  std::optional<double> timeoutSeconds;  ///< the silence allowed, in force when the stall was found
  std::vector<RankEvidence> ranks;
  StallVerdict verdict;

  /// "rank 2 stalled (no heartbeat for 4.1 s); culprit: rank 2 is in train.py:33 in step; ..."
  std::string summary() const;
  /// The console's report: the summary, then every rank's state, and the stacks
  /// showsStackOf says.
  std::string text() const;
  /// Whether text() shows `rank`'s stack: the culprits' (every rank's when it names none),
  /// where one was read.
  bool showsStackOf(const RankEvidence& rank) const;
  /// Whether text() shows any stack.
  bool showsStack() const;
  nlohmann::json json() const;
};

/// pltrun's exit status when the job ends because ranks stalled (timeout(1)'s, "timed out").
constexpr int kStalledExitStatus = 124;

}  // namespace pltrun
