#include "launcher/group/error_file.h"

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace pltrun {
namespace {

// A worker's error file may nest a value 60000 levels deep within its size cap, and
// nlohmann's dump() recurses once per level: deeper than this, the value is not shown.
constexpr size_t kShownDepth = 64;

bool nestedDeeperThan(const nlohmann::json& value, size_t limit) {
  std::vector<std::pair<const nlohmann::json*, size_t>> pending{{&value, 1}};
  while (!pending.empty()) {
    const auto [current, depth] = pending.back();
    pending.pop_back();
    if (!current->is_structured()) continue;
    if (depth > limit) return true;
    for (const nlohmann::json& child : *current) pending.emplace_back(&child, depth + 1);
  }
  return false;
}

// A non-string value of an error file, as text.
std::string valueText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (nestedDeeperThan(value, kShownDepth)) {
    return "(a JSON " + std::string(value.type_name()) + " nested deeper than " + std::to_string(kShownDepth) +
           " levels, not shown)";
  }
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string stringField(const nlohmann::json& object, const char* key) {
  auto found = object.find(key);
  if (found == object.end()) return {};
  return valueText(*found);
}

}  // namespace

std::optional<RecordedError> parseErrorFile(const std::string& text) {
  nlohmann::json document = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!document.is_object() || !document.contains("message")) return std::nullopt;
  RecordedError recorded;
  const nlohmann::json& message = document["message"];
  if (message.is_object()) {
    recorded.message = stringField(message, "message");
    if (message.contains("extraInfo") && message["extraInfo"].is_object()) {
      recorded.traceback = stringField(message["extraInfo"], "py_callstack");
      recorded.timestamp = stringField(message["extraInfo"], "timestamp");
    }
  } else {
    recorded.message = valueText(message);
  }
  return recorded;
}

}  // namespace pltrun
