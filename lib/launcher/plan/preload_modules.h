#pragma once
// --preload's value: the Python modules the zygote imports, checked up front so a typo in a
// module's name is one line at start, not a traceback in a process the user never started.

#include <string>
#include <string_view>
#include <vector>

namespace pltrun {

/// "torch, numpy,torch.distributed" -> {"torch", "numpy", "torch.distributed"}: each a
/// dotted Python name. Throws InvalidArgument naming the first entry that is not one.
std::vector<std::string> parsePreloadModules(std::string_view text);

}  // namespace pltrun
