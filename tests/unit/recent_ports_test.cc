// RecentPorts: the ports the next attempt's workers' store must not reuse are the recent
// ones, so that a job restarting any number of times in a narrow port range never runs out.

#include "launcher/net/recent_ports.h"

#include <catch2/catch.hpp>

using pltrun::RecentPorts;
using namespace std::chrono_literals;

TEST_CASE("recent ports: the last 16 are always refused, older ones after 5 minutes", "[recent_ports]") {
  RecentPorts recent;
  const auto start = RecentPorts::Clock::time_point{} + 1h;
  for (int port = 1000; port < 1040; ++port) recent.add(port, start);
  CHECK(recent.contains(1000, start + 1min));  // within 5 minutes: every one
  CHECK(recent.contains(1039, start + 1min));
  CHECK_FALSE(recent.contains(1000, start + 6min));  // older than that, beyond the last 16: forgotten
  CHECK(recent.contains(1039, start + 6min));
  CHECK(recent.contains(1024, start + 6min));  // the 16th from the end
  CHECK(recent.size() == RecentPorts::kAlwaysKept);
}

TEST_CASE("recent ports: a crowded range makes room down to the last 16, never below", "[recent_ports]") {
  RecentPorts recent;
  const auto now = RecentPorts::Clock::time_point{} + 1h;
  for (int port = 0; port < 100; ++port) recent.add(port, now);
  CHECK(recent.makeRoom());
  CHECK(recent.size() == 16);
  CHECK_FALSE(recent.contains(83, now));
  CHECK(recent.contains(84, now));
  CHECK_FALSE(recent.makeRoom());
}

TEST_CASE("recent ports: 100000 attempts in a 200-port range stay bounded", "[recent_ports][bounded]") {
  // Each attempt takes the lowest port of the range not refused, as a narrow range forces.
  RecentPorts recent;
  auto now = RecentPorts::Clock::time_point{} + 1h;
  int previous = -1;
  for (int attempt = 0; attempt < 100000; ++attempt) {
    now += 10ms;
    int port = -1;
    for (int pass = 0; pass < 2 && port < 0; ++pass) {
      for (int candidate = 40000; candidate < 40200; ++candidate) {
        if (!recent.contains(candidate, now)) {
          port = candidate;
          break;
        }
      }
      if (port < 0) recent.makeRoom();
    }
    REQUIRE(port >= 0);
    REQUIRE(port != previous);  // never the last attempt's port
    recent.add(port, now);
    previous = port;
  }
  CHECK(recent.size() <= 200);
}
