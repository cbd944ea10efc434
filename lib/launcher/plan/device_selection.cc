#include "launcher/plan/device_selection.h"

#include <set>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr const char* kFlag = "--devices";
constexpr const char* kAccepted =
    "expected a GPU count like 3, a list of GPU indices like \"1, 3\", -1 for all GPUs, or 0 "
    "for none";

std::vector<int> firstGpus(const std::string& value, long long count, int visibleGpuCount) {
  if (count > visibleGpuCount) {
    throwInvalidFlag(
        kFlag, value,
        "asks for " + std::to_string(count) + " GPUs but " + std::to_string(visibleGpuCount) + " are visible");
  }
  std::vector<int> indices;
  for (int index = 0; index < count; ++index) indices.push_back(index);
  return indices;
}

// Lightning: a comma makes the value a list of indices; empty pieces ("1,") are skipped.
std::vector<int> indexList(const std::string& value, std::string_view list, int visibleGpuCount) {
  std::vector<int> indices;
  std::set<int> seen;
  for (std::string_view piece : splitText(list, ',')) {
    piece = trimSpaces(piece);
    if (piece.empty()) continue;
    auto index = parseInteger(piece);
    if (!index || *index < 0) throwInvalidFlag(kFlag, value, kAccepted);
    if (*index >= visibleGpuCount) {
      throwInvalidFlag(
          kFlag, value,
          "GPU " + std::to_string(*index) + " is not visible (" + std::to_string(visibleGpuCount) + " GPUs visible)");
    }
    if (!seen.insert(static_cast<int>(*index)).second) {
      throwInvalidFlag(kFlag, value, "GPU " + std::to_string(*index) + " is listed twice");
    }
    indices.push_back(static_cast<int>(*index));
  }
  if (indices.empty()) throwInvalidFlag(kFlag, value, kAccepted);
  return indices;
}

}  // namespace

std::vector<int> parseDevices(const std::string& value, int visibleGpuCount) {
  std::string_view text = trimSpaces(value);
  // Python-style lists ("[1, 3]") are accepted as the same list.
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    return indexList(value, text.substr(1, text.size() - 2), visibleGpuCount);
  }
  if (text.find(',') != std::string_view::npos) return indexList(value, text, visibleGpuCount);

  auto count = parseInteger(text);
  if (!count || *count < -1) throwInvalidFlag(kFlag, value, kAccepted);
  if (*count == -1) {
    if (visibleGpuCount == 0) throwInvalidFlag(kFlag, value, "asks for every GPU but none is visible");
    return firstGpus(value, visibleGpuCount, visibleGpuCount);
  }
  return firstGpus(value, *count, visibleGpuCount);
}

std::string cudaVisibleDevicesFor(const std::vector<int>& selected, const std::vector<std::string>& visibleIds) {
  std::string joined;
  for (int index : selected) {
    if (!joined.empty()) joined += ',';
    joined += visibleIds.at(static_cast<size_t>(index));
  }
  return joined;
}

}  // namespace pltrun
