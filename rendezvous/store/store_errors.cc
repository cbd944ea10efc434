#include "rendezvous/store/store_errors.h"

#include "base/seconds_text.h"

namespace pltrun::detail {

std::string describeKeys(const std::vector<std::string>& keys) {
  constexpr size_t kShown = 5;
  std::string text;
  for (size_t index = 0; index < keys.size() && index < kShown; ++index) {
    if (index > 0) text += ", ";
    text += "'" + keys[index] + "'";
  }
  if (keys.size() > kShown) text += ", ... (" + std::to_string(keys.size()) + " keys)";
  return text;
}

Error waitTimeout(const std::vector<std::string>& keys, const std::string& store, std::chrono::milliseconds waited) {
  return Error(ErrorCode::Timeout, "timed out after " + secondsText(waited) + " s waiting for " +
                                       (keys.size() == 1 ? "key " : "keys ") + describeKeys(keys) + " in " + store);
}

void requireOneValuePerKey(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  if (keys.size() != values.size()) {
    throw Error(ErrorCode::InvalidArgument, "multiSet needs as many values as keys (" + std::to_string(keys.size()) +
                                                " keys, " + std::to_string(values.size()) + " values)");
  }
}

}  // namespace pltrun::detail
