#pragma once
// torchrun 2.14's --print-completion {bash,zsh,tcsh}: a script that completes pltrun's
// long options in that shell (torchrun needs the shtab package for it; pltrun needs nothing).

#include <string>
#include <vector>

namespace pltrun {

/// The completion script for `shell` over `longOptions` ("--nproc-per-node", ...). Throws
/// InvalidArgument naming the shells for any other shell.
std::string shellCompletionScript(const std::string& shell, const std::vector<std::string>& longOptions);

}  // namespace pltrun
