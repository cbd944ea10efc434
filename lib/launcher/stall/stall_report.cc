#include "launcher/stall/stall_report.h"

#include <algorithm>

#include "base/seconds_text.h"

namespace pltrun {
namespace {

std::string indented(const std::string& text, const std::string& indent) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t stop = text.find('\n', start);
    if (stop == std::string::npos) stop = text.size();
    out += indent + text.substr(start, stop - start) + "\n";
    start = stop + 1;
  }
  return out;
}

std::string rankLine(const RankEvidence& rank) {
  std::string line =
      "rank " + std::to_string(rank.rank) +
      (rank.onOtherNode ? " (on " + (rank.host.empty() ? "another node" : rank.host) + ", as its node published it): "
                        : " (pid " + std::to_string(rank.pid) + " on " + rank.host + "): ");
  line += rank.counter ? "step " + std::to_string(*rank.counter) : "no progress counter";
  line += rank.silentSeconds
              ? ", last heartbeat " + secondsText(std::chrono::duration<double>(*rank.silentSeconds)) + " s ago"
              : ", never sent a heartbeat";
  if (rank.stalled) line += " (stalled)";
  if (!rank.stack.noStack.empty()) line += "; no stack: " + rank.stack.noStack;
  if (!rank.stack.where.empty()) {
    line += rank.stack.inCollective
                ? "; waits in " + rank.stack.waitingIn + " at " + rank.stack.where
                : "; " + std::string(rank.stack.kind == StackSample::Kind::Stopped ? "" : "at ") + rank.stack.where;
  }
  return line;
}

std::vector<int> stalledRanks(const std::vector<RankEvidence>& ranks) {
  std::vector<int> stalled;
  for (const RankEvidence& rank : ranks) {
    if (rank.stalled) stalled.push_back(rank.rank);
  }
  return stalled;
}

}  // namespace

std::string StallReport::summary() const {
  double longest = 0;
  for (const RankEvidence& rank : ranks) {
    if (rank.stalled && rank.silentSeconds) longest = std::max(longest, *rank.silentSeconds);
  }
  const std::vector<int> stalled = stalledRanks(ranks);
  return rankListText(stalled) + (stalled.size() == 1 ? " stalled" : " stalled") + " (no heartbeat for " +
         secondsText(std::chrono::duration<double>(longest)) + " s, --stall-timeout " + timeoutText +
         "); culprit: " + (verdict.culprits.empty() ? "unknown, " : "") + verdict.why;
}

std::string StallReport::text() const {
  std::string report =
      "pltrun: stall detected on " + host + ", attempt " + std::to_string(attempt) + ": " + summary() + "\n";
  for (const RankEvidence& rank : ranks) {
    report += "  " + rankLine(rank) + "\n";
    if (showsStackOf(rank)) report += indented(rank.stack.text, "    ");
  }
  return report;
}

// The culprits' stacks, and every stack when it cannot tell; the waiters' are in the JSON.
bool StallReport::showsStackOf(const RankEvidence& rank) const {
  const bool culprit = std::find(verdict.culprits.begin(), verdict.culprits.end(), rank.rank) != verdict.culprits.end();
  return (culprit || verdict.culprits.empty()) && !rank.stack.text.empty();
}

bool StallReport::showsStack() const {
  return std::any_of(ranks.begin(), ranks.end(), [this](const RankEvidence& rank) { return showsStackOf(rank); });
}

nlohmann::json StallReport::json() const {
  nlohmann::json document = {{"attempt", attempt},
                             {"host", host},
                             {"stall_timeout_s", timeoutSeconds ? nlohmann::json(*timeoutSeconds) : nlohmann::json()},
                             {"culprits", verdict.culprits},
                             {"why", verdict.why},
                             {"summary", summary()},
                             {"ranks", nlohmann::json::array()}};
  for (const RankEvidence& rank : ranks) {
    document["ranks"].push_back(
        {{"rank", rank.rank},
         {"host", rank.host},
         {"pid", rank.pid},
         {"counter", rank.counter ? nlohmann::json(*rank.counter) : nlohmann::json()},
         {"silent_seconds", rank.silentSeconds ? nlohmann::json(*rank.silentSeconds) : nlohmann::json()},
         {"stalled", rank.stalled},
         {"on_other_node", rank.onOtherNode},
         {"stack_kind", stackKindName(rank.stack.kind)},
         {"where", rank.stack.where},
         {"in_collective", rank.stack.inCollective},
         {"waiting_in", rank.stack.waitingIn},
         {"stack", rank.stack.text},
         {"no_stack", rank.stack.noStack.empty() ? nlohmann::json() : nlohmann::json(rank.stack.noStack)}});
  }
  return document;
}

}  // namespace pltrun
