#include "launcher/plan/stall_timeout.h"

#include "base/seconds_text.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {

std::optional<StallTimeout> parseStallTimeout(const std::string& flag, const std::string& value) {
  const std::string word = lowercase(trimSpaces(value));
  if (word == "off") return std::nullopt;
  if (word == "auto") return StallTimeout{true, {}};
  const std::optional<std::chrono::milliseconds> seconds = parseSeconds(word);
  if (!seconds) throwInvalidFlag(flag, value, "expected a number of seconds like 300, auto, or off");
  // Zero as written, not a tiny value that rounds to it ("0.0004" is refused below).
  if (word.find_first_of("123456789") == std::string::npos) return std::nullopt;
  if (*seconds < kShortestStallTimeout) {
    const std::string shortest = secondsText(kShortestStallTimeout);
    throwInvalidFlag(flag, value,
                     "below the shortest stall timeout, " + shortest + " s (silence is checked every " + shortest +
                         " s): give " + shortest + " or more, auto, or off");
  }
  return StallTimeout{false, *seconds};
}

std::string stallTimeoutText(const StallTimeout& timeout) {
  return timeout.automatic ? "auto" : secondsFlagText(timeout.fixed);
}

}  // namespace pltrun
