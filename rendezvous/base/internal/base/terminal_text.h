#pragma once
// Text from outside pltrun (a worker's error file and stderr, a host name or message read
// from the store) as pltrun's own reports may print it on a terminal: an ESC or BEL in it
// must not recolour, retitle or ring the user's terminal. Valid UTF-8 stays, but for the C1
// controls (U+0080-U+009F, which some terminals obey); every other control byte or invalid
// byte becomes \xNN.
//   terminalSafe     keeps line breaks and tabs: for text of many lines (a report, a stack).
//   terminalSafeLine keeps none: for text shown inside one line (a host name, a key, a state,
//                    an error on a one-line message), where a newline would forge a line
//                    of pltrun's own that the other party wrote.

#include <string>
#include <string_view>

namespace pltrun {

/// `byte` as the four characters \xNN: how pltrun shows a byte it will not print raw.
inline void appendByteEscape(std::string& out, unsigned char byte) {
  static const char* digits = "0123456789abcdef";
  out += "\\x";
  out += digits[byte >> 4];
  out += digits[byte & 15];
}

namespace terminal_text_detail {

// The length of the valid UTF-8 sequence (of 2 to 4 bytes) at `at`, or 0.
inline size_t utf8SequenceLength(std::string_view text, size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const size_t length = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 && lead < 0xE0 ? 2 : 0;
  if (length == 0 || at + length > text.size()) return 0;
  for (size_t index = 1; index < length; ++index) {
    if ((static_cast<unsigned char>(text[at + index]) & 0xC0) != 0x80) return 0;
  }
  const auto second = static_cast<unsigned char>(text[at + 1]);
  if (lead == 0xE0 && second < 0xA0) return 0;   // overlong
  if (lead == 0xED && second >= 0xA0) return 0;  // a surrogate
  if (lead == 0xF0 && second < 0x90) return 0;   // overlong
  if (lead == 0xF4 && second >= 0x90) return 0;  // past U+10FFFF
  if (lead == 0xC2 && second < 0xA0) return 0;   // a C1 control
  return length;
}

// The loop of both: `keepLineBreaks` keeps '\n' and '\t' as they are.
inline std::string safeText(std::string_view text, bool keepLineBreaks) {
  std::string safe;
  safe.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const auto byte = static_cast<unsigned char>(text[at]);
    if ((byte >= 0x20 && byte < 0x7F) || (keepLineBreaks && (byte == '\n' || byte == '\t'))) {
      safe += static_cast<char>(byte);
      ++at;
      continue;
    }
    if (const size_t length = utf8SequenceLength(text, at)) {
      safe.append(text.substr(at, length));
      at += length;
      continue;
    }
    appendByteEscape(safe, byte);
    ++at;
  }
  return safe;
}

}  // namespace terminal_text_detail

/// Text of many lines: line breaks and tabs kept, every other control shown as \xNN.
inline std::string terminalSafe(std::string_view text) { return terminal_text_detail::safeText(text, true); }

/// Text printed within one line: every control, '\n', '\r' and '\t' included, shown as
/// \xNN, so that it can neither drive the terminal nor start a line of its own.
inline std::string terminalSafeLine(std::string_view text) { return terminal_text_detail::safeText(text, false); }

}  // namespace pltrun
