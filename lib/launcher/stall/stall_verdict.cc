#include "launcher/stall/stall_verdict.h"

#include <algorithm>
#include <set>

namespace pltrun {
namespace {

// Another node's counter counts once its rank had settled (kSettledSilenceSeconds).
std::optional<long long> comparableCounter(const RankEvidence& rank) {
  if (!rank.onOtherNode) return rank.counter;
  if (!rank.silentSeconds || *rank.silentSeconds < kSettledSilenceSeconds) return std::nullopt;
  return rank.counter;
}

std::optional<StallVerdict> byCounters(const std::vector<RankEvidence>& ranks) {
  std::optional<long long> lowest, highest;
  for (const RankEvidence& rank : ranks) {
    if (!comparableCounter(rank)) continue;
    lowest = std::min(lowest.value_or(*rank.counter), *rank.counter);
    highest = std::max(highest.value_or(*rank.counter), *rank.counter);
  }
  if (!lowest || *lowest == *highest) return std::nullopt;
  StallVerdict verdict;
  for (const RankEvidence& rank : ranks) {
    if (comparableCounter(rank) == lowest) verdict.culprits.push_back(rank.rank);
  }
  verdict.why = rankListText(verdict.culprits) + (verdict.culprits.size() == 1 ? " is" : " are") +
                " behind: progress counter " + std::to_string(*lowest) + " where the others reached " +
                std::to_string(*highest);
  return verdict;
}

bool hasStack(const RankEvidence& rank) {
  return rank.stack.kind == StackSample::Kind::Python || rank.stack.kind == StackSample::Kind::Native ||
         rank.stack.kind == StackSample::Kind::Stopped;
}

std::string waitingText(const std::vector<const RankEvidence*>& waiters) {
  std::set<std::string> places;
  for (const RankEvidence* waiter : waiters) places.insert(waiter->stack.waitingIn);
  std::string text;
  for (const std::string& place : places) text += (text.empty() ? "" : ", ") + place;
  return text;
}

std::optional<StallVerdict> byStacks(const std::vector<RankEvidence>& ranks) {
  std::vector<const RankEvidence*> waiters, others;
  for (const RankEvidence& rank : ranks) {
    if (!hasStack(rank)) continue;
    (rank.stack.inCollective ? waiters : others).push_back(&rank);
  }
  if (waiters.empty() || others.empty()) return std::nullopt;
  StallVerdict verdict;
  std::vector<int> waiting;
  for (const RankEvidence* waiter : waiters) waiting.push_back(waiter->rank);
  for (const RankEvidence* other : others) {
    verdict.culprits.push_back(other->rank);
    if (!verdict.why.empty()) verdict.why += "; ";
    verdict.why += "rank " + std::to_string(other->rank) + " is " +
                   (other->stack.kind == StackSample::Kind::Stopped ? "" : "in ") + other->stack.where;
  }
  verdict.why +=
      "; " + rankListText(waiting) + (waiting.size() == 1 ? " waits" : " wait") + " in " + waitingText(waiters);
  return verdict;
}

std::optional<StallVerdict> bySilence(const std::vector<RankEvidence>& ranks) {
  StallVerdict verdict;
  bool someBeat = false;
  for (const RankEvidence& rank : ranks) {
    if (rank.stalled) {
      verdict.culprits.push_back(rank.rank);
    } else if (rank.silentSeconds && (!rank.onOtherNode || *rank.silentSeconds < kStillBeatingSeconds)) {
      someBeat = true;
    }
  }
  if (verdict.culprits.empty() || !someBeat) return std::nullopt;
  verdict.why = rankListText(verdict.culprits) + " stopped sending heartbeats while the others still send them";
  return verdict;
}

// A node of one worker that is not waiting for others: nobody else can have caused it.
std::optional<StallVerdict> theOnlyRank(const std::vector<RankEvidence>& ranks) {
  std::vector<const RankEvidence*> here;
  for (const RankEvidence& rank : ranks) {
    if (!rank.onOtherNode) here.push_back(&rank);
  }
  if (here.size() != 1 || !here.front()->stalled || here.front()->stack.inCollective) return std::nullopt;
  const RankEvidence& rank = *here.front();
  std::string why = "rank " + std::to_string(rank.rank) + " is the only worker here";
  if (!rank.stack.where.empty()) {
    why += std::string(rank.stack.kind == StackSample::Kind::Stopped ? " and is " : ", in ") + rank.stack.where;
  }
  return StallVerdict{{rank.rank}, why};
}

}  // namespace

std::string rankListText(const std::vector<int>& ranks) {
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  std::string text = sorted.size() == 1 ? "rank " : "ranks ";
  for (size_t index = 0; index < sorted.size(); ++index) {
    text += (index > 0 ? ", " : "") + std::to_string(sorted[index]);
  }
  return text;
}

StallVerdict judgeStall(const std::vector<RankEvidence>& ranks) {
  if (auto verdict = byCounters(ranks)) return *verdict;
  if (auto verdict = byStacks(ranks)) return *verdict;
  if (auto verdict = bySilence(ranks)) return *verdict;
  if (auto verdict = theOnlyRank(ranks)) return *verdict;
  return StallVerdict{{},
                      "cannot tell which rank caused it: the progress counters and stacks do not tell the ranks "
                      "apart (every stack is shown)"};
}

}  // namespace pltrun
