#include "launcher/command_line/toml_key_depth.h"

#include <string>

namespace pltrun {

namespace {

// The offset just after the string whose opening quote is at `at`. Where the TOML is not
// valid (no closing quote) the parser stops at that string, so where this one ends after it
// does not matter: what the parser builds before it was read here exactly.
size_t afterString(std::string_view text, size_t at) {
  const char quote = text[at];
  const bool escapes = quote == '"';  // literal strings ('...') have none
  const std::string triple(3, quote);
  const bool multiLine = text.compare(at, 3, triple) == 0;
  for (size_t i = at + (multiLine ? 3 : 1); i < text.size(); ++i) {
    if (escapes && text[i] == '\\') {
      ++i;  // the escaped character, a quote included
    } else if (multiLine && text.compare(i, 3, triple) == 0) {
      return i + 3;
    } else if (!multiLine && (text[i] == quote || text[i] == '\n')) {
      return i + 1;
    }
  }
  return text.size();
}

}  // namespace

std::optional<size_t> dotPastLimit(std::string_view text, size_t limit) {
  size_t dots = 0;
  size_t at = 0;
  while (at < text.size()) {
    const char c = text[at];
    if (c == '"' || c == '\'') {
      at = afterString(text, at);
    } else if (c == '#') {
      at = text.find('\n', at);  // npos ends the loop
    } else {
      if (c == '.' && ++dots > limit) return at;
      ++at;
    }
  }
  return std::nullopt;
}

}  // namespace pltrun
