#pragma once
// Error messages every Store implementation words the same way.

#include <chrono>
#include <string>
#include <vector>

#include "pltrun/error.h"

namespace pltrun::detail {

/// "a, b, c" (at most the first 5, then "... (N keys)").
std::string describeKeys(const std::vector<std::string>& keys);

/// Error(Timeout): "timed out after 2.0 s waiting for keys [a, b] in STORE".
Error waitTimeout(const std::vector<std::string>& keys, const std::string& store, std::chrono::milliseconds waited);

/// Throws Error(InvalidArgument) unless multiSet got as many values as keys.
void requireOneValuePerKey(const std::vector<std::string>& keys, const std::vector<std::string>& values);

}  // namespace pltrun::detail
