#include "launcher/plan/stall_timeout.h"

#include "launcher/plan/text_parsing.h"

namespace pltrun {

std::optional<StallTimeout> parseStallTimeout(const std::string& flag, const std::string& value) {
  const std::string word = lowercase(trimSpaces(value));
  if (word == "off") return std::nullopt;
  if (word == "auto") return StallTimeout{true, {}};
  const std::optional<std::chrono::milliseconds> seconds = parseSeconds(word);
  if (!seconds) throwInvalidFlag(flag, value, "expected a number of seconds like 300, auto, or off");
  if (seconds->count() == 0) return std::nullopt;
  return StallTimeout{false, *seconds};
}

std::string stallTimeoutText(const StallTimeout& timeout) {
  return timeout.automatic ? "auto" : secondsFlagText(timeout.fixed);
}

}  // namespace pltrun
