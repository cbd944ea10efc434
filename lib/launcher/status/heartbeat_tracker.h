#pragma once
// The age of each node's last heartbeat, measured by watching its counter move: the agents
// count beats (rR/beat/SLOT), they write no time, so that no two clocks are ever compared.
// A counter seen to change was beaten then; one not seen to change is at least as old as
// the watching.

#include <chrono>
#include <map>
#include <string>
#include <utility>

#include "launcher/status/job_status.h"

namespace pltrun {

class HeartbeatTracker {
 public:
  using Clock = std::chrono::steady_clock;

  /// Records `beats` (readHeartbeats' keys of `round`) as read at `now`.
  void observe(int round, const JobKeys& beats, Clock::time_point now);
  /// Seconds since each slot's counter was last seen to move (or first seen, if it has not).
  HeartbeatAges ages(int round, Clock::time_point now) const;
  /// Whether every slot 1..slots of `round` has been seen to move.
  bool allMoved(int round, int slots) const;

 private:
  struct Counter {
    std::string value;
    Clock::time_point since;
    bool moved = false;
  };
  std::map<std::pair<int, int>, Counter> counters_;  ///< (round, slot)
};

}  // namespace pltrun
