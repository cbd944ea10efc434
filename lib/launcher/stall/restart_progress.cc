#include "launcher/stall/restart_progress.h"

namespace pltrun {

bool RestartProgress::stopAfter(int attempt, std::optional<long long> highest) {
  if (limit_ <= 0) return false;
  if (!best_) {
    // Nothing to pass yet: the first counters set the mark, none leave the check unarmed.
    if (highest) {
      best_ = highest;
      bestAttempt_ = attempt;
    }
    return false;
  }
  if (highest && *highest > *best_) {
    best_ = highest;
    bestAttempt_ = attempt;
    withoutProgress_ = 0;
    return false;
  }
  ++withoutProgress_;
  return withoutProgress_ >= limit_;
}

std::string RestartProgress::line(const std::string& attemptWord) const {
  const std::string restarts = withoutProgress_ == 1 ? "1 restart" : std::to_string(withoutProgress_) + " restarts";
  return "no progress in " + restarts + " in a row: no rank passed step " + std::to_string(best_.value_or(0)) +
         " (reached in " + attemptWord + " " + std::to_string(bestAttempt_) +
         "); not restarting again (--max-no-progress-restarts " + std::to_string(limit_) + ")";
}

nlohmann::json RestartProgress::json() const {
  return {{"counter", best_ ? nlohmann::json(*best_) : nlohmann::json()},
          {"counter_attempt", bestAttempt_},
          {"restarts_without_progress", withoutProgress_},
          {"max_no_progress_restarts", limit_}};
}

std::optional<long long> highestCounter(const std::vector<RankEvidence>& ranks) {
  std::optional<long long> highest;
  for (const RankEvidence& rank : ranks) {
    const std::optional<long long> counter = rank.highestCounter ? rank.highestCounter : rank.counter;
    if (counter && (!highest || *counter > *highest)) highest = counter;
  }
  return highest;
}

}  // namespace pltrun
