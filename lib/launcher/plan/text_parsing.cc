#include "launcher/plan/text_parsing.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "base/seconds_text.h"

namespace pltrun {

bool isNameCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

bool isVariableName(std::string_view name) {
  if (name.empty() || (name.front() >= '0' && name.front() <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string lowercase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

std::string_view trimSpaces(std::string_view text) {
  const auto isSpace = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && isSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back())) text.remove_suffix(1);
  return text;
}

std::optional<long long> parseInteger(std::string_view text) {
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
  return value;
}

std::optional<std::chrono::milliseconds> parseSeconds(std::string_view text) {
  // Plain decimal only: strtod alone would also take "0x10", "inf" or "1e3".
  const bool decimal = !text.empty() && text.find_first_not_of("0123456789.") == std::string_view::npos &&
                       std::count(text.begin(), text.end(), '.') <= 1 && text != ".";
  if (!decimal) return std::nullopt;
  const std::string copy(text);  // strtod needs a terminated string
  const double seconds = std::strtod(copy.c_str(), nullptr);
  if (seconds > 1e7) return std::nullopt;
  return std::chrono::milliseconds(std::llround(seconds * 1000));
}

std::string secondsFlagText(std::chrono::milliseconds duration) { return secondsText(duration, 3); }

long long parseIntegerFlag(const std::string& flag, const std::string& value, long long low, long long high,
                           const std::string& accepted) {
  auto number = parseInteger(trimSpaces(value));
  if (!number || *number < low || *number > high) throwInvalidFlag(flag, value, accepted);
  return *number;
}

std::chrono::milliseconds parseSecondsFlag(const std::string& flag, const std::string& value) {
  auto duration = parseSeconds(value);
  if (!duration) throwInvalidFlag(flag, value, "expected a number of seconds like 30 or 0.5");
  return *duration;
}

std::string countedNoun(long long count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

std::string joinText(const std::vector<std::string>& pieces, std::string_view separator) {
  std::string text;
  for (size_t index = 0; index < pieces.size(); ++index) {
    if (index > 0) text += separator;
    text += pieces[index];
  }
  return text;
}

std::vector<std::string_view> splitText(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  size_t start = 0;
  while (true) {
    size_t stop = text.find(separator, start);
    if (stop == std::string_view::npos) {
      pieces.push_back(text.substr(start));
      return pieces;
    }
    pieces.push_back(text.substr(start, stop - start));
    start = stop + 1;
  }
}

}  // namespace pltrun
