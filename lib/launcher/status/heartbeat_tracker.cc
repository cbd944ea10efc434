#include "launcher/status/heartbeat_tracker.h"

#include "rendezvous/elastic/store_layout.h"

namespace pltrun {

void HeartbeatTracker::observe(int round, const JobKeys& beats, Clock::time_point now) {
  for (const auto& [name, value] : beats) {
    const std::optional<int> slot = rdzv::layout::beatSlot(round, name);
    if (!slot) continue;
    auto [counter, added] = counters_.try_emplace({round, *slot}, Counter{value, now, false});
    if (!added && counter->second.value != value) counter->second = Counter{value, now, true};
  }
}

HeartbeatAges HeartbeatTracker::ages(int round, Clock::time_point now) const {
  HeartbeatAges ages;
  for (const auto& [where, counter] : counters_) {
    if (where.first != round) continue;
    ages[where.second] = std::chrono::duration<double>(now - counter.since).count();
  }
  return ages;
}

bool HeartbeatTracker::allMoved(int round, int slots) const {
  for (int slot = 1; slot <= slots; ++slot) {
    auto found = counters_.find({round, slot});
    if (found == counters_.end() || !found->second.moved) return false;
  }
  return true;
}

}  // namespace pltrun
