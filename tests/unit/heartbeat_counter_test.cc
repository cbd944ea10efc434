// heartbeatCounter: which heartbeat payloads are progress counters. Anything else is still
// a heartbeat, just without a counter.

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/stall/heartbeat_socket.h"

using pltrun::heartbeatCounter;

TEST_CASE("heartbeat counter: a non-negative decimal is the counter", "[heartbeat_counter]") {
  CHECK(heartbeatCounter("0") == 0);
  CHECK(heartbeatCounter("7") == 7);
  CHECK(heartbeatCounter("42") == 42);
  CHECK(heartbeatCounter("000123") == 123);
  CHECK(heartbeatCounter("999999999999999999") == 999999999999999999LL);  // 18 digits
}

TEST_CASE("heartbeat counter: surrounding spaces and a newline are allowed", "[heartbeat_counter]") {
  CHECK(heartbeatCounter(" 42") == 42);
  CHECK(heartbeatCounter("42\n") == 42);
  CHECK(heartbeatCounter("  42 \r\n") == 42);
  CHECK(heartbeatCounter("\t9\t") == 9);
}

TEST_CASE("heartbeat counter: garbage, empty and huge payloads carry no counter", "[heartbeat_counter]") {
  const std::vector<std::string> payloads = {"",
                                             " ",
                                             "\n",
                                             "beat",
                                             "alive",
                                             "42abc",
                                             "4 2",
                                             "-1",
                                             "+5",
                                             "1e3",
                                             "0x10",
                                             "3.5",
                                             "1,000",
                                             "9999999999999999999",  // 19 digits: past what the receiver reads
                                             "99999999999999999999999999999",  // past a long long
                                             std::string("4\0002", 3)};        // a NUL inside
  for (const std::string& payload : payloads) {
    INFO("payload '" << payload << "'");
    CHECK_FALSE(heartbeatCounter(payload));
  }
}
