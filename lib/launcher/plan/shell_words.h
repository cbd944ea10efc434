#pragma once
// Words and a POSIX shell, both ways. Splitting: a command template split the way a shell
// splits a simple command, with no expansion: blanks separate words; '...' keeps everything
// literally; "..." keeps everything but \" \\ \$ \` (unescaped); a backslash outside quotes
// escapes the next character. So `--remote-command "kubectl exec -c 'my container' {host} --"`
// works. Quoting: words written so that a shell on another host reads them back unchanged.

#include <string>
#include <string_view>
#include <vector>

namespace pltrun {

/// The words of `text`; throws Error(InvalidArgument) naming `what` when a quote is not
/// closed or the text ends in a lone backslash.
std::vector<std::string> splitShellWords(const std::string& text, const std::string& what);

/// The inside of a "..." part of `text` from `at` (just past the opening quote) appended to
/// `word`, with a backslash before " \ $ or ` dropped, as a shell does (no expansion); `at`
/// ends past the closing quote. false: the quote is not closed (the caller names the text).
bool appendDoubleQuoted(std::string_view text, size_t& at, std::string& word);

/// `text` quoted for a POSIX shell ('...' with ' written as '\''); a word of only safe
/// characters as it is.
std::string shellQuote(const std::string& text);

/// `words`, each quoted by shellQuote, separated by spaces: one command line that a shell
/// (or splitShellWords) splits back into the same words.
std::string shellCommandLine(const std::vector<std::string>& words);

}  // namespace pltrun
