#pragma once
// A wall-clock time as pltrun's JSON files write it: ISO 8601 in UTC, to the second
// ("2026-11-29T08:42:37Z"), the one place that decides how.

#include <chrono>
#include <ctime>
#include <string>

namespace pltrun {

inline std::string utcTimeText(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace pltrun
