#pragma once
// TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, as torchrun reads it: a Python string.Template whose
// ${role_name}, ${rank} and ${local_rank} (or $rank ...) are substituted per worker with
// safe_substitute's rules ($$ is a $, anything else is left as written), and the result put
// in front of each of the worker's console lines as is (torch adds no space: "[${rank}]:"
// gives "[0]:line"). Pure.

#include <string>

namespace pltrun {

std::string expandLinePrefixTemplate(const std::string& text, const std::string& roleName, int rank, int localRank);

}  // namespace pltrun
