#include "rendezvous/elastic/join_roster.h"

#include <chrono>

#include "pltrun/error.h"
#include "rendezvous/elastic/expected_nodes.h"
#include "rendezvous/elastic/store_layout.h"

namespace pltrun::rdzv {

JoinRoster::JoinRoster(Store& store, std::vector<std::string> expected, std::string jobPrefix, int round)
    : store_(store), expected_(std::move(expected)), jobPrefix_(std::move(jobPrefix)), round_(round) {}

void JoinRoster::track(int joined) {
  if (!knowsNames()) return;
  while (static_cast<int>(arrivals_.size()) < joined) {
    const std::string key = jobPrefix_ + layout::slot(round_, static_cast<int>(arrivals_.size()) + 1);
    if (!store_.check({key})) break;  // slot taken, descriptor not written yet: next time
    try {
      arrivals_.push_back(nodeDescriptorFromJson(store_.get(key, std::chrono::seconds(10))));
    } catch (const Error& error) {
      if (error.code() != ErrorCode::Protocol) throw;
      arrivals_.emplace_back();  // not pltrun's descriptor: it accounts for nobody
    }
  }
  std::vector<std::string> now = missingNodes(expected_, arrivals_);
  if (tracked_ && *tracked_ == now) return;
  store_.set(jobPrefix_ + layout::missing(round_), nodeNamesJson(now));
  tracked_ = std::move(now);
}

std::optional<std::vector<std::string>> JoinRoster::missing() {
  if (!knowsNames()) return std::nullopt;  // nobody keeps the names: no request for them
  if (tracked_) return tracked_;
  const std::string key = jobPrefix_ + layout::missing(round_);
  if (!store_.check({key})) return std::nullopt;
  return nodeNamesFromJson(store_.get(key, std::chrono::seconds(10)));
}

}  // namespace pltrun::rdzv
