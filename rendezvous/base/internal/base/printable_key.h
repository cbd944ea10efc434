#pragma once
// A key (or any text from the wire) as pltrun's messages quote it: the one place that decides
// how a store key appears in a log line or an error.

#include <string>

#include "base/terminal_text.h"

namespace pltrun {

/// `key` as it may appear in a log line or error: printable ASCII kept, anything else
/// (control characters, ANSI escapes, bytes of binary keys) as \xNN, at most 80 characters.
inline std::string printableKey(const std::string& key) {
  constexpr size_t kShown = 80;
  std::string text = "'";
  for (size_t i = 0; i < key.size() && text.size() < kShown; ++i) {
    const auto byte = static_cast<unsigned char>(key[i]);
    if (byte >= 0x20 && byte < 0x7F && byte != '\\' && byte != '\'') {
      text += static_cast<char>(byte);
    } else {
      appendByteEscape(text, byte);
    }
  }
  text += text.size() >= kShown ? "'..." : "'";
  return text;
}

}  // namespace pltrun
