#pragma once
// Small strict parsers shared by every flag parser: they accept exactly the text asked
// for (no trailing junk, no silent wrap-around), so a typo becomes an error, not a value.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pltrun/error.h"

namespace pltrun {

/// Throws InvalidArgument for a flag value, in the one-line form every flag error uses:
/// "--flag: 'value' is not valid: <what is accepted>".
[[noreturn]] inline void throwInvalidFlag(const std::string& flag, const std::string& value,
                                          const std::string& accepted) {
  throw Error(ErrorCode::InvalidArgument, flag + ": '" + value + "' is not valid: " + accepted);
}

/// A character of a host name, an IPv4 address or a run id: ASCII letters, digits, '.', '-'
/// and '_'. Nothing a shell, ssh or a path would read as syntax.
bool isNameCharacter(char c);

/// A name a shell takes as a variable's (and so `export` and `env` accept): a letter or _,
/// then letters, digits or _.
bool isVariableName(std::string_view name);

/// Leading and trailing spaces and tabs removed.
std::string_view trimSpaces(std::string_view text);

/// ASCII letters in lower case, the rest as it is (for keys and words matched regardless of case).
std::string lowercase(std::string_view text);

/// The whole text as a base-10 integer (an optional leading '-'), or nothing.
std::optional<long long> parseInteger(std::string_view text);

/// A plain decimal number of seconds ("30", "0.5", "2."; no sign, exponent, hex, inf or
/// nan, at most 1e7) as milliseconds, rounded to the nearest; nothing for anything else.
std::optional<std::chrono::milliseconds> parseSeconds(std::string_view text);

/// `duration` as text that parseSeconds reads back to the same milliseconds ("2.500"): how
/// one pltrun writes a time on another's command line (the driver's agents).
std::string secondsFlagText(std::chrono::milliseconds duration);

/// `value` of `flag` as an integer in low..high (spaces around it allowed); throws the
/// flag's error, ending with `accepted`, otherwise.
long long parseIntegerFlag(const std::string& flag, const std::string& value, long long low, long long high,
                           const std::string& accepted);

/// `value` of `flag` as parseSeconds reads it; throws the flag's error otherwise.
std::chrono::milliseconds parseSecondsFlag(const std::string& flag, const std::string& value);

/// Splits at every `separator`, keeping empty pieces so callers can reject them.
std::vector<std::string_view> splitText(std::string_view text, char separator);

/// The pieces with `separator` between them: splitText's inverse.
std::string joinText(const std::vector<std::string>& pieces, std::string_view separator);

/// "1 worker", "4 workers": `count` and `noun`, with an s unless it is one.
std::string countedNoun(long long count, const std::string& noun);

}  // namespace pltrun
