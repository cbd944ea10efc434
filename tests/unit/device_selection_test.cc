// --devices against every row of Lightning's GPU table (parsed by parseDeviceSelection,
// then checked against the visible GPUs by selectDevices), the flag text the driver forwards,
// and cudaVisibleDevicesFor.

#include "launcher/plan/device_selection.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::cudaVisibleDevicesFor;
using pltrun::DeviceSelection;
using pltrun::deviceSelectionText;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::parseDeviceSelection;

namespace {

using Indices = std::vector<int>;

// Both steps, as the launcher takes them: the text when the command line is read, the
// visible GPUs when they have been counted.
Indices parseDevices(const std::string& value, int visibleGpuCount) {
  return pltrun::selectDevices(parseDeviceSelection(value), visibleGpuCount);
}

// Requires parseDevices(value, visible) to throw InvalidArgument naming --devices and the
// value, and returns the message for further checks.
std::string devicesError(const std::string& value, int visible) {
  INFO("--devices '" << value << "' with " << visible << " visible GPUs");
  try {
    parseDevices(value, visible);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(error.what(), Contains("--devices"));
    CHECK_THAT(error.what(), Contains("'" + value + "'"));
    return error.what();
  }
  FAIL("parseDevices accepted '" << value << "' with " << visible << " visible GPUs");
  return {};
}

}  // namespace

TEST_CASE("Lightning's devices table, row by row", "[device_selection]") {
  SECTION("\"3\": the first three GPUs") { CHECK(parseDevices("3", 4) == Indices{0, 1, 2}); }
  SECTION("\"-1\": every visible GPU") {
    CHECK(parseDevices("-1", 4) == Indices{0, 1, 2, 3});
    CHECK(parseDevices("-1", 1) == Indices{0});
  }
  SECTION("\"[0]\": GPU 0") { CHECK(parseDevices("[0]", 4) == Indices{0}); }
  SECTION("\"[1, 3]\": GPUs 1 and 3") { CHECK(parseDevices("[1, 3]", 4) == Indices{1, 3}); }
  SECTION("\"1, 3\": GPUs 1 and 3") { CHECK(parseDevices("1, 3", 4) == Indices{1, 3}); }
  SECTION("\"0\": no GPU") {
    CHECK(parseDevices("0", 4).empty());
    CHECK(parseDevices("0", 0).empty());
  }
}

TEST_CASE("a comma makes a list of indices, as in Lightning", "[device_selection]") {
  SECTION("\"1,\" is GPU 1, not one GPU") { CHECK(parseDevices("1,", 4) == Indices{1}); }
  SECTION("\"0,\" is GPU 0, not none") { CHECK(parseDevices("0,", 4) == Indices{0}); }
  SECTION("order is kept") { CHECK(parseDevices("3,0,2", 4) == Indices{3, 0, 2}); }
  SECTION("spaces around entries and around the value") {
    CHECK(parseDevices(" 2 ,1 ", 4) == Indices{2, 1});
    CHECK(parseDevices(" 2 ", 4) == Indices{0, 1});
  }
  SECTION("a bracketed single index is that index, not a count") { CHECK(parseDevices("[2]", 4) == Indices{2}); }
}

TEST_CASE("a count selects the first GPUs", "[device_selection]") {
  for (int visible = 0; visible <= 8; ++visible) {
    for (int count = 0; count <= visible; ++count) {
      Indices expected;
      for (int index = 0; index < count; ++index) expected.push_back(index);
      INFO(count << " of " << visible);
      CHECK(parseDevices(std::to_string(count), visible) == expected);
    }
  }
}

TEST_CASE("parseDevices rejects what cannot be satisfied or read", "[device_selection]") {
  SECTION("duplicates") {
    CHECK_THAT(devicesError("1,1", 4), Contains("twice"));
    devicesError("[0, 2, 0]", 4);
  }
  SECTION("more GPUs than are visible") {
    CHECK_THAT(devicesError("3", 2), Contains("2 are visible"));
    devicesError("1", 0);
  }
  SECTION("an index that is not visible") {
    CHECK_THAT(devicesError("0,4", 2), Contains("GPU 4"));
    devicesError("[2]", 2);
    devicesError("0,", 0);
  }
  SECTION("negative values other than -1") {
    devicesError("-2", 4);
    devicesError("1,-1", 4);
    devicesError("[-1]", 4);
  }
  SECTION("-1 with no GPU visible") { CHECK_THAT(devicesError("-1", 0), Contains("none is visible")); }
  SECTION("not numbers") {
    devicesError("abc", 4);
    devicesError("", 4);
    devicesError(" ", 4);
    devicesError("2x", 4);
    devicesError("1.5", 4);
    devicesError("auto", 4);
    devicesError("1;3", 4);
  }
  SECTION("lists without any index") {
    devicesError(",", 4);
    devicesError("[]", 4);
    devicesError("[ , ]", 4);
  }
}

TEST_CASE("cudaVisibleDevicesFor maps indices to the ids this process sees", "[device_selection]") {
  const std::vector<std::string> visible{"2", "5", "7"};
  CHECK(cudaVisibleDevicesFor({0, 2}, visible) == "2,7");
  CHECK(cudaVisibleDevicesFor({2, 0}, visible) == "7,2");
  CHECK(cudaVisibleDevicesFor({1}, visible) == "5");
  CHECK(cudaVisibleDevicesFor({0, 1, 2}, visible) == "2,5,7");
  SECTION("no index hides every GPU") { CHECK(cudaVisibleDevicesFor({}, visible).empty()); }
  SECTION("UUIDs are kept as they are") {
    const std::vector<std::string> uuids{"GPU-aaaa-1111", "MIG-bbbb-2222", "GPU-cccc-3333"};
    CHECK(cudaVisibleDevicesFor({2, 0}, uuids) == "GPU-cccc-3333,GPU-aaaa-1111");
    CHECK(cudaVisibleDevicesFor({1}, uuids) == "MIG-bbbb-2222");
  }
  SECTION("together with parseDevices") {
    CHECK(cudaVisibleDevicesFor(parseDevices("1, 2", 3), visible) == "5,7");
    CHECK(cudaVisibleDevicesFor(parseDevices("2", 3), visible) == "2,5");
    CHECK(cudaVisibleDevicesFor(parseDevices("-1", 3), visible) == "2,5,7");
  }
}

TEST_CASE("what the text alone decides is decided before any GPU is counted", "[device_selection]") {
  CHECK(parseDeviceSelection("3").kind == DeviceSelection::Kind::First);
  CHECK(parseDeviceSelection("3").count == 3);
  CHECK(parseDeviceSelection("0").count == 0);
  CHECK(parseDeviceSelection("-1").kind == DeviceSelection::Kind::All);
  CHECK(parseDeviceSelection("[1, 3]").kind == DeviceSelection::Kind::Listed);
  CHECK(parseDeviceSelection("[1, 3]").indices == std::vector<long long>{1, 3});
  CHECK(parseDeviceSelection("[1, 3]") == parseDeviceSelection("1,3"));
  CHECK(parseDeviceSelection("[1, 3]").spelled == "[1, 3]");  // errors quote what was typed
  SECTION("malformed text and duplicates fail without GPUs to compare with") {
    for (std::string value : {"abc", "", "-2", "1,-1", "[]", ",", "1;3", "1,1"}) {
      INFO("--devices '" << value << "'");
      CHECK_THROWS_AS(parseDeviceSelection(value), Error);
    }
  }
  SECTION("a GPU that is not there fails only against the visible GPUs") {
    DeviceSelection selection = parseDeviceSelection("[1, 7]");
    CHECK(pltrun::selectDevices(selection, 8) == Indices{1, 7});
    CHECK_THAT(devicesError("[1, 7]", 4), Contains("GPU 7 is not visible (4 GPUs visible)"));
  }
}

TEST_CASE("the flag text of a selection parses back to the same selection", "[device_selection]") {
  for (std::string value : {"0", "3", "-1", "1, 3", "[1, 3]", "3,0,2", "[2]", "0,", " 2 ,1 ", "[0, 1, 2, 3]"}) {
    INFO("--devices '" << value << "'");
    DeviceSelection selection = parseDeviceSelection(value);
    CHECK(parseDeviceSelection(deviceSelectionText(selection)) == selection);
  }
  CHECK(deviceSelectionText(parseDeviceSelection(" 3 ")) == "3");
  CHECK(deviceSelectionText(parseDeviceSelection("-1")) == "-1");
  CHECK(deviceSelectionText(parseDeviceSelection("[1, 3]")) == "1,3");
  SECTION("one listed GPU keeps its comma: \"2\" alone would be a count") {
    CHECK(deviceSelectionText(parseDeviceSelection("[2]")) == "2,");
    CHECK(parseDevices(deviceSelectionText(parseDeviceSelection("[2]")), 4) == Indices{2});
  }
  SECTION("the slots --include/--exclude leave on a host") {
    CHECK(deviceSelectionText(pltrun::listedDevices({0, 2})) == "0,2");
    CHECK(deviceSelectionText(pltrun::listedDevices({3})) == "3,");
    CHECK(parseDevices(deviceSelectionText(pltrun::listedDevices({3})), 4) == Indices{3});
  }
}

TEST_CASE("flag --auto-select-gpus asks for --devices' count, else one GPU per worker",
          "[device_selection][auto_select_gpus]") {
  using pltrun::gpusToAutoSelect;
  using pltrun::WorkerCount;
  const std::optional<WorkerCount> noCount;
  CHECK(gpusToAutoSelect(noCount, parseDeviceSelection("3")) == 3);
  CHECK(gpusToAutoSelect(noCount, parseDeviceSelection("-1")) == -1);
  CHECK(gpusToAutoSelect(WorkerCount::fixed(3), parseDeviceSelection("3")) == 3);
  SECTION("without --devices: --nproc-per-node N, gpu and auto: all free, nothing: pltrun's one worker") {
    CHECK(gpusToAutoSelect(WorkerCount::fixed(4), std::nullopt) == 4);
    CHECK(gpusToAutoSelect(WorkerCount::of(WorkerCount::Kind::Gpu), std::nullopt) == -1);
    CHECK(gpusToAutoSelect(WorkerCount::of(WorkerCount::Kind::Auto), std::nullopt) == -1);
    CHECK(gpusToAutoSelect(noCount, std::nullopt) == 1);
  }
  SECTION("nothing to choose: listed GPUs, none, DeepSpeed's --include/--exclude, cpu workers") {
    CHECK_THROWS_WITH(gpusToAutoSelect(noCount, parseDeviceSelection("1, 3")),
                      "--auto-select-gpus chooses free GPUs, but --devices '1, 3' names its GPUs: nothing to choose; "
                      "give a count (--devices 2) or -1, or drop --auto-select-gpus");
    CHECK_THROWS_WITH(gpusToAutoSelect(noCount, parseDeviceSelection("0")), Contains("'0' selects no GPU"));
    DeviceSelection included = pltrun::listedDevices({1});
    included.flag = "--include";
    CHECK_THROWS_WITH(gpusToAutoSelect(noCount, included), Contains("--include '1,' names its GPUs"));
    CHECK_THROWS_AS(gpusToAutoSelect(noCount, pltrun::allDevicesBut({0})), Error);
    CHECK_THROWS_WITH(gpusToAutoSelect(WorkerCount::fixed(2), parseDeviceSelection("3")),
                      "--nproc-per-node: '2' is not valid: --devices '3' selects 3 GPUs, one worker each; drop "
                      "--nproc-per-node or make them agree");
    CHECK_THROWS_WITH(gpusToAutoSelect(WorkerCount::of(WorkerCount::Kind::Cpu), std::nullopt),
                      Contains("--nproc-per-node cpu runs workers without GPUs"));
  }
}
