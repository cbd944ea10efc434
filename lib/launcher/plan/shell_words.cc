#include "launcher/plan/shell_words.h"

#include <string_view>

#include "pltrun/error.h"

namespace pltrun {
namespace {

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

// Inside "...", a backslash escapes only these (as in a POSIX shell).
bool escapedInDoubleQuotes(char c) { return std::string_view("\"\\$`").find(c) != std::string_view::npos; }

}  // namespace

bool appendDoubleQuoted(std::string_view text, size_t& at, std::string& word) {
  for (; at < text.size(); ++at) {
    if (text[at] == '"') {
      ++at;
      return true;
    }
    if (text[at] == '\\' && at + 1 < text.size() && escapedInDoubleQuotes(text[at + 1])) ++at;
    word += text[at];
  }
  return false;
}

std::vector<std::string> splitShellWords(const std::string& text, const std::string& what) {
  const auto fail = [&](const std::string& problem) {
    throw Error(ErrorCode::InvalidArgument, what + ": '" + text + "': " + problem);
  };
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  for (size_t at = 0; at < text.size(); ++at) {
    const char c = text[at];
    if (isBlank(c)) {
      if (inWord) words.push_back(std::move(word));
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\'') {
      const size_t close = text.find('\'', at + 1);
      if (close == std::string::npos) fail("a ' quote is not closed");
      word.append(text, at + 1, close - at - 1);
      at = close;
    } else if (c == '"') {
      ++at;
      if (!appendDoubleQuoted(text, at, word)) fail("a \" quote is not closed");
      --at;  // the loop steps past the closing quote
    } else if (c == '\\') {
      if (at + 1 >= text.size()) fail("it ends in a lone backslash");
      word += text[++at];
    } else {
      word += c;
    }
  }
  if (inWord) words.push_back(std::move(word));
  return words;
}

std::string shellQuote(const std::string& text) {
  if (!text.empty() &&
      text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:=@,+%") ==
          std::string::npos) {
    return text;
  }
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string shellCommandLine(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& word : words) line += (line.empty() ? "" : " ") + shellQuote(word);
  return line;
}

}  // namespace pltrun
