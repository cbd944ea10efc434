#pragma once
// Durations as the messages and flags of pltrun write them: seconds with a fixed number of
// decimals ("2.0", "0.250"), the one place that decides how.

#include <chrono>
#include <cstdio>
#include <string>

namespace pltrun {

/// `duration` in seconds with `decimals` digits after the point, without a unit.
inline std::string secondsText(std::chrono::duration<double> duration, int decimals = 1) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, duration.count());
  return text;
}

}  // namespace pltrun
