#include "launcher/plan/device_selection.h"

#include <algorithm>
#include <set>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr const char* kFlag = "--devices";
constexpr const char* kAccepted =
    "expected a GPU count like 3, a list of GPU indices like \"1, 3\", -1 for all GPUs, or 0 "
    "for none";

// Lightning: a comma makes the value a list of indices; empty pieces ("1,") are skipped.
std::vector<long long> indexList(const std::string& value, std::string_view list) {
  std::vector<long long> indices;
  std::set<long long> seen;
  for (std::string_view piece : splitText(list, ',')) {
    piece = trimSpaces(piece);
    if (piece.empty()) continue;
    auto index = parseInteger(piece);
    if (!index || *index < 0) throwInvalidFlag(kFlag, value, kAccepted);
    if (!seen.insert(*index).second) {
      throwInvalidFlag(kFlag, value, "GPU " + std::to_string(*index) + " is listed twice");
    }
    indices.push_back(*index);
  }
  if (indices.empty()) throwInvalidFlag(kFlag, value, kAccepted);
  return indices;
}

std::vector<int> firstGpus(const DeviceSelection& selection, long long count, int visibleGpuCount) {
  if (count > visibleGpuCount) {
    throwInvalidFlag(
        selection.flag, selection.spelled,
        "asks for " + std::to_string(count) + " GPUs but " + std::to_string(visibleGpuCount) + " are visible");
  }
  std::vector<int> indices;
  for (int index = 0; index < count; ++index) indices.push_back(index);
  return indices;
}

void requireVisible(const DeviceSelection& selection, int visibleGpuCount) {
  for (long long index : selection.indices) {
    if (index >= visibleGpuCount) {
      throwInvalidFlag(
          selection.flag, selection.spelled,
          "GPU " + std::to_string(index) + " is not visible (" + std::to_string(visibleGpuCount) + " GPUs visible)");
    }
  }
}

std::vector<int> gpusBut(const DeviceSelection& selection, int visibleGpuCount) {
  requireVisible(selection, visibleGpuCount);
  std::vector<int> kept;
  for (int index = 0; index < visibleGpuCount; ++index) {
    if (std::find(selection.indices.begin(), selection.indices.end(), index) == selection.indices.end()) {
      kept.push_back(index);
    }
  }
  if (kept.empty()) throwInvalidFlag(selection.flag, selection.spelled, "excludes every visible GPU");
  return kept;
}

}  // namespace

DeviceSelection parseDeviceSelection(const std::string& value) {
  DeviceSelection selection;
  selection.spelled = value;
  std::string_view text = trimSpaces(value);
  // Python-style lists ("[1, 3]") are accepted as the same list.
  const bool bracketed = text.size() >= 2 && text.front() == '[' && text.back() == ']';
  if (bracketed) text = text.substr(1, text.size() - 2);
  if (bracketed || text.find(',') != std::string_view::npos) {
    selection.kind = DeviceSelection::Kind::Listed;
    selection.indices = indexList(value, text);
    return selection;
  }
  auto count = parseInteger(text);
  if (!count || *count < -1) throwInvalidFlag(kFlag, value, kAccepted);
  if (*count == -1) {
    selection.kind = DeviceSelection::Kind::All;
  } else {
    selection.count = *count;
  }
  return selection;
}

DeviceSelection allDevicesBut(const std::vector<int>& indices) {
  DeviceSelection selection;
  selection.kind = DeviceSelection::Kind::AllBut;
  selection.indices.assign(indices.begin(), indices.end());
  return selection;
}

DeviceSelection listedDevices(const std::vector<int>& indices) {
  DeviceSelection selection;
  selection.kind = DeviceSelection::Kind::Listed;
  selection.indices.assign(indices.begin(), indices.end());
  selection.spelled = deviceSelectionText(selection);
  return selection;
}

std::string deviceSelectionText(const DeviceSelection& selection) {
  switch (selection.kind) {
    case DeviceSelection::Kind::All:
      return "-1";
    case DeviceSelection::Kind::First:
      return std::to_string(selection.count);
    case DeviceSelection::Kind::Listed:
    case DeviceSelection::Kind::AllBut:
      break;
  }
  std::string text;
  for (long long index : selection.indices) text += (text.empty() ? "" : ",") + std::to_string(index);
  return selection.indices.size() == 1 ? text + "," : text;
}

std::vector<int> selectDevices(const DeviceSelection& selection, int visibleGpuCount) {
  switch (selection.kind) {
    case DeviceSelection::Kind::All:
      if (visibleGpuCount == 0) {
        throwInvalidFlag(selection.flag, selection.spelled, "asks for every GPU but none is visible");
      }
      return firstGpus(selection, visibleGpuCount, visibleGpuCount);
    case DeviceSelection::Kind::First:
      return firstGpus(selection, selection.count, visibleGpuCount);
    case DeviceSelection::Kind::AllBut:
      return gpusBut(selection, visibleGpuCount);
    case DeviceSelection::Kind::Listed:
      break;
  }
  requireVisible(selection, visibleGpuCount);
  return {selection.indices.begin(), selection.indices.end()};
}

std::string cudaVisibleDevicesFor(const std::vector<int>& selected, const std::vector<std::string>& visibleIds) {
  std::string joined;
  for (int index : selected) {
    if (!joined.empty()) joined += ',';
    joined += visibleIds.at(static_cast<size_t>(index));
  }
  return joined;
}

int gpusToAutoSelect(const std::optional<WorkerCount>& nprocPerNode, const std::optional<DeviceSelection>& devices) {
  constexpr const char* kAutoSelect = "--auto-select-gpus";
  if (devices) {
    if (devices->kind == DeviceSelection::Kind::All) return -1;
    if (devices->kind == DeviceSelection::Kind::First && devices->count > 0) {
      // As worker_layout refuses it without the flag, but before any GPU is chosen and locked.
      if (nprocPerNode && nprocPerNode->kind == WorkerCount::Kind::Fixed && nprocPerNode->count != devices->count) {
        throwInvalidFlag("--nproc-per-node", workerCountText(*nprocPerNode),
                         devices->flag + " '" + devices->spelled + "' selects " + std::to_string(devices->count) +
                             " GPUs, one worker each; drop --nproc-per-node or make them agree");
      }
      return static_cast<int>(devices->count);
    }
    const std::string what = devices->kind == DeviceSelection::Kind::First ? "selects no GPU" : "names its GPUs";
    throw Error(ErrorCode::InvalidArgument,
                std::string(kAutoSelect) + " chooses free GPUs, but " + devices->flag + " '" + devices->spelled + "' " +
                    what + ": nothing to choose; give a count (--devices 2) or -1, or drop " + kAutoSelect);
  }
  if (!nprocPerNode) return 1;
  switch (nprocPerNode->kind) {
    case WorkerCount::Kind::Fixed:
      return nprocPerNode->count;
    case WorkerCount::Kind::Gpu:
    case WorkerCount::Kind::Auto:
      return -1;
    case WorkerCount::Kind::Cpu:
      break;
  }
  throw Error(ErrorCode::InvalidArgument, std::string(kAutoSelect) +
                                              " chooses free GPUs, but --nproc-per-node cpu runs workers without "
                                              "GPUs: nothing to choose; drop one of them");
}

}  // namespace pltrun
