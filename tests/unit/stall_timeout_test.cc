// parseStallTimeout: --stall-timeout's values (seconds, auto, off) and its one-line error.

#include "launcher/plan/stall_timeout.h"

#include <catch2/catch.hpp>
#include <string>

#include "pltrun/error.h"

using pltrun::parseStallTimeout;
using pltrun::stallTimeoutText;
using std::chrono::milliseconds;

TEST_CASE("stall timeout: off and 0 turn stall detection off", "[stall_timeout]") {
  CHECK_FALSE(parseStallTimeout("--stall-timeout", "off"));
  CHECK_FALSE(parseStallTimeout("--stall-timeout", "OFF"));
  CHECK_FALSE(parseStallTimeout("--stall-timeout", "0"));
  CHECK_FALSE(parseStallTimeout("--stall-timeout", "0.0"));
}

TEST_CASE("stall timeout: auto and a number of seconds", "[stall_timeout]") {
  auto automatic = parseStallTimeout("--stall-timeout", "auto");
  REQUIRE(automatic);
  CHECK(automatic->automatic);
  CHECK(parseStallTimeout("--stall-timeout", " Auto ")->automatic);

  auto four = parseStallTimeout("--stall-timeout", "4");
  REQUIRE(four);
  CHECK_FALSE(four->automatic);
  CHECK(four->fixed == milliseconds(4000));
  auto half = parseStallTimeout("--stall-timeout", "0.5");
  REQUIRE(half);
  CHECK(half->fixed == milliseconds(500));
  CHECK(parseStallTimeout("--stall-timeout", "300")->fixed == milliseconds(300000));
}

TEST_CASE("stall timeout: the text for the driver's agents parses back to the same value", "[stall_timeout]") {
  for (const std::string value : {"auto", "4", "0.5", "300", "0.125"}) {
    INFO(value);
    auto parsed = parseStallTimeout("--stall-timeout", value);
    REQUIRE(parsed);
    auto again = parseStallTimeout("--stall-timeout", stallTimeoutText(*parsed));
    REQUIRE(again);
    CHECK(again->automatic == parsed->automatic);
    CHECK(again->fixed == parsed->fixed);
  }
}

TEST_CASE("stall timeout: a bad value is an invalid argument with the flag's one-line message", "[stall_timeout]") {
  for (const std::string value : {"", "soon", "-1", "1e3", "4s", "0x10", "inf", "1..2", "99999999999"}) {
    INFO("value '" << value << "'");
    try {
      parseStallTimeout("--stall-timeout", value);
      FAIL("accepted");
    } catch (const pltrun::Error& error) {
      CHECK(error.code() == pltrun::ErrorCode::InvalidArgument);
      CHECK(std::string(error.what()) ==
            "--stall-timeout: '" + value + "' is not valid: expected a number of seconds like 300, auto, or off");
    }
  }
}

TEST_CASE("stall timeout: below 0.1 s is refused naming the shortest, even a value that rounds to 0",
          "[stall_timeout]") {
  for (const std::string value : {"0.05", "0.0004", "0.09", "0.001"}) {
    INFO("value '" << value << "'");
    try {
      parseStallTimeout("--stall-timeout", value);
      FAIL("accepted");
    } catch (const pltrun::Error& error) {
      CHECK(error.code() == pltrun::ErrorCode::InvalidArgument);
      CHECK(std::string(error.what()) == "--stall-timeout: '" + value +
                                             "' is not valid: below the shortest stall timeout, 0.1 s (silence is "
                                             "checked every 0.1 s): give 0.1 or more, auto, or off");
    }
  }
  REQUIRE(parseStallTimeout("--stall-timeout", "0.1"));
  CHECK(parseStallTimeout("--stall-timeout", "0.1")->fixed == milliseconds(100));
  CHECK_FALSE(parseStallTimeout("--stall-timeout", "0.000"));
  CHECK_FALSE(parseStallTimeout("--stall-timeout", "00"));
}
