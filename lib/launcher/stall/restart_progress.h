#pragma once
// Pure: whether restarts still make progress (--max-no-progress-restarts K). Each failed
// attempt that would be restarted hands in the highest progress counter (step) any of its
// ranks sent; a restart made progress when that counter is strictly greater than the highest
// of every earlier attempt. A job that resumes from its checkpoint counts on from the
// checkpoint's step, so a crash at the same step every time never passes it. After K
// consecutive restarts without progress, restarting stops.
//
// No counter yet (no rank ever sent a numeric heartbeat): the check cannot apply, and it
// changes nothing. Once a counter was seen, an attempt that sent none (it crashed before
// its first step) made no progress. The first attempt with counters is progress: there was
// nothing before it to pass.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/stall/stall_verdict.h"

namespace pltrun {

/// pltrun's exit status when restarts stopped because they made no progress: next to a
/// stall's 124 (both are pltrun's own verdicts), below the shell's 126, 127 and 128 + N.
constexpr int kNoProgressExitStatus = 125;

class RestartProgress {
 public:
  /// `limit`: K; 0 turns the check off.
  explicit RestartProgress(int limit) : limit_(limit) {}

  /// Attempt `attempt` failed and would be restarted; `highest` is the highest counter any
  /// of its ranks sent (none: none sent one). Returns whether restarting must stop.
  bool stopAfter(int attempt, std::optional<long long> highest);

  int limit() const { return limit_; }
  /// The highest counter of every attempt so far; none before any.
  std::optional<long long> best() const { return best_; }
  /// The attempt that reached best().
  int bestAttempt() const { return bestAttempt_; }
  /// Consecutive restarts, up to the last one handed in, that did not pass best().
  int withoutProgress() const { return withoutProgress_; }

  /// The one line said when restarting stops: "no progress in 3 restarts in a row: no rank
  /// passed step 5 (reached in attempt 0); not restarting again (--max-no-progress-restarts 3)".
  std::string line(const std::string& attemptWord = "attempt") const;
  /// For events.jsonl and failure.json: counter, counter_attempt, restarts_without_progress,
  /// max_no_progress_restarts.
  nlohmann::json json() const;

 private:
  int limit_;
  std::optional<long long> best_;
  int bestAttempt_ = 0;
  int withoutProgress_ = 0;
};

/// The highest counter among `ranks`; none when none of them sent one.
std::optional<long long> highestCounter(const std::vector<RankEvidence>& ranks);

}  // namespace pltrun
