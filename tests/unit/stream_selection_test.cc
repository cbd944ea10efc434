// torchrun's -r/--redirects and -t/--tee values, and --local-ranks-filter.

#include "launcher/plan/stream_selection.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::kBothStreams;
using pltrun::kNoStream;
using pltrun::kStderrBit;
using pltrun::kStdoutBit;
using pltrun::parseLocalRanksFilter;
using pltrun::parseStreamSelection;
using pltrun::StreamSelection;

namespace {

// Requires `parse(flag, value)` to throw InvalidArgument naming the flag and the value.
template <typename Parse>
std::string flagError(Parse parse, const std::string& flag, const std::string& value) {
  INFO(flag << " '" << value << "'");
  try {
    parse(flag, value);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(error.what(), Contains(flag));
    CHECK_THAT(error.what(), Contains("'" + value + "'"));
    return error.what();
  }
  FAIL(flag << " accepted '" << value << "'");
  return {};
}

std::string streamError(const std::string& value) { return flagError(parseStreamSelection, "--redirects", value); }
std::string filterError(const std::string& value) {
  return flagError(parseLocalRanksFilter, "--local-ranks-filter", value);
}

}  // namespace

TEST_CASE("one stream value applies to every local rank", "[stream_selection]") {
  const unsigned expected[] = {kNoStream, kStdoutBit, kStderrBit, kBothStreams};
  for (unsigned bits = 0; bits <= 3; ++bits) {
    StreamSelection selection = parseStreamSelection("--redirects", std::to_string(bits));
    INFO("value " << bits);
    CHECK(selection.allRanks == expected[bits]);
    CHECK(selection.perRank.empty());
    for (int rank = 0; rank < 16; ++rank) CHECK(selection.forLocalRank(rank) == expected[bits]);
    CHECK(selection.any() == (bits != 0));
  }
}

TEST_CASE("per-rank stream values", "[stream_selection]") {
  StreamSelection selection = parseStreamSelection("--tee", "0:1,1:2");
  CHECK(selection.perRank.size() == 2);
  CHECK(selection.forLocalRank(0) == kStdoutBit);
  CHECK(selection.forLocalRank(1) == kStderrBit);
  SECTION("ranks not listed get no stream") {
    CHECK(selection.forLocalRank(2) == kNoStream);
    CHECK(selection.forLocalRank(100) == kNoStream);
  }
  CHECK(selection.any());
  SECTION("any rank, any order, spaces allowed") {
    StreamSelection other = parseStreamSelection("--tee", "7:3, 2 : 0");
    CHECK(other.forLocalRank(7) == kBothStreams);
    CHECK(other.forLocalRank(2) == kNoStream);
    CHECK(other.forLocalRank(0) == kNoStream);
  }
  SECTION("a single per-rank entry") {
    StreamSelection single = parseStreamSelection("--tee", "3:3");
    CHECK(single.forLocalRank(3) == kBothStreams);
    CHECK(single.forLocalRank(0) == kNoStream);
  }
}

TEST_CASE("bad stream values are errors naming the flag and value", "[stream_selection]") {
  streamError("4");
  streamError("-1");
  streamError("x");
  streamError("");
  streamError("1,2");
  streamError("0:5");
  streamError("0:-1");
  streamError("a:1");
  streamError("-1:1");
  streamError("0:1,");
  streamError("0:1:2");
  streamError("0:");
  streamError(":1");
  CHECK_THAT(streamError("0:1,0:2"), Contains("twice"));
  SECTION("the flag named is the one passed in") { flagError(parseStreamSelection, "--tee", "9"); }
}

TEST_CASE("flag --local-ranks-filter parses distinct non-negative ranks", "[stream_selection]") {
  CHECK(parseLocalRanksFilter("--local-ranks-filter", "0,2") == std::vector<int>{0, 2});
  CHECK(parseLocalRanksFilter("--local-ranks-filter", "3") == std::vector<int>{3});
  CHECK(parseLocalRanksFilter("--local-ranks-filter", "5, 1 ,0") == std::vector<int>{5, 1, 0});
}

TEST_CASE("flag --local-ranks-filter rejects duplicates, negatives and empty entries", "[stream_selection]") {
  CHECK_THAT(filterError("0,0"), Contains("twice"));
  filterError("1,2,1");
  filterError("-1");
  filterError("0,-2");
  filterError("");
  filterError("0,");
  filterError(",1");
  filterError("x");
  filterError("1.5");
}
