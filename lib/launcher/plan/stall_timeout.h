#pragma once
// --stall-timeout: how long a worker that has sent a heartbeat may go without another before
// it counts as stalled (docs/USAGE.md "Hangs"). A fixed number of seconds, or `auto`: a
// multiple of the longest interval between heartbeats seen so far in the attempt, never
// under a floor, and only once a few intervals have been seen.

#include <chrono>
#include <optional>
#include <string>

namespace pltrun {

struct StallTimeout {
  bool automatic = false;
  std::chrono::milliseconds fixed{0};  ///< when not automatic
};

/// `auto`: the timeout is kAutoStallFactor x the longest interval seen, at least kAutoStallFloor,
/// and nobody is called stalled before kAutoStallIntervals intervals of that worker were seen.
constexpr double kAutoStallFactor = 5.0;
constexpr std::chrono::milliseconds kAutoStallFloor{60000};
constexpr int kAutoStallIntervals = 3;

/// The shortest fixed timeout: silence is checked every 0.1 s (StallMonitor::kCheckInterval)
/// and a heartbeat's time may be read up to 50 ms late (kLongestReadWindow), so a shorter
/// one could not be told from a worker that beats.
constexpr std::chrono::milliseconds kShortestStallTimeout{100};

/// "off" or "0": none; "auto"; or a number of seconds (parseSeconds), at least
/// kShortestStallTimeout. Throws the flag's one-line error for anything else.
std::optional<StallTimeout> parseStallTimeout(const std::string& flag, const std::string& value);

/// The flag's text again (for the driver's agents): "auto" or seconds.
std::string stallTimeoutText(const StallTimeout& timeout);

}  // namespace pltrun
