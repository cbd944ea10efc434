#pragma once
// A command template split into words the way a POSIX shell splits a simple command, with
// no expansion: blanks separate words; '...' keeps everything literally; "..." keeps
// everything but \" \\ \$ \` (unescaped); a backslash outside quotes escapes the next
// character. So `--remote-command "kubectl exec -c 'my container' {host} --"` works.

#include <string>
#include <vector>

namespace pltrun {

/// The words of `text`; throws Error(InvalidArgument) naming `what` when a quote is not
/// closed or the text ends in a lone backslash.
std::vector<std::string> splitShellWords(const std::string& text, const std::string& what);

}  // namespace pltrun
