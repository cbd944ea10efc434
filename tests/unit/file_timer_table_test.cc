// FileTimerTable: torch's FileTimer requests, set, released and expired as torch's server
// does, within bounds: a worker past its share, or a job past the table's size, is refused
// new timers (issue 42: one worker registering timers without end grew pltrun without bound).

#include "launcher/group/file_timer_table.h"

#include <catch2/catch.hpp>
#include <string>

using pltrun::FileTimerLimits;
using pltrun::FileTimerRequest;
using pltrun::FileTimerTable;
using pltrun::TimerApplied;

namespace {

FileTimerRequest timer(pid_t pid, const std::string& scope, double expiration = 100) {
  FileTimerRequest request;
  request.pid = pid;
  request.scopeId = scope;
  request.expirationTime = expiration;
  request.signal = 9;
  return request;
}

}  // namespace

TEST_CASE("FileTimerTable: a worker past its share is refused new timers, others are not", "[file_timer]") {
  FileTimerTable table(FileTimerLimits{3, 100});
  for (int scope = 0; scope < 3; ++scope) CHECK(table.apply(timer(10, std::to_string(scope)), 0) == TimerApplied::Set);
  CHECK(table.apply(timer(10, "3"), 0) == TimerApplied::WorkerFull);
  CHECK(table.apply(timer(11, "a descendant of rank 0's"), 0) == TimerApplied::WorkerFull);
  CHECK(table.apply(timer(20, "0"), 1) == TimerApplied::Set);       // another worker's share
  CHECK(table.apply(timer(10, "1", 200), 0) == TimerApplied::Set);  // a held timer may be moved
  CHECK(table.size() == 4);
  CHECK(table.apply(timer(10, "1", -1), 0) == TimerApplied::Released);
  CHECK(table.apply(timer(10, "3"), 0) == TimerApplied::Set);  // room again
  CHECK(table.size() == 4);
}

TEST_CASE("FileTimerTable: the table past its size is refused new timers", "[file_timer]") {
  FileTimerTable table(FileTimerLimits{10, 4});
  for (int rank = 0; rank < 4; ++rank) CHECK(table.apply(timer(10 + rank, "step"), rank) == TimerApplied::Set);
  CHECK(table.apply(timer(20, "step"), 5) == TimerApplied::TableFull);
  CHECK(table.size() == 4);
}

TEST_CASE("FileTimerTable: expired timers free their worker's share", "[file_timer]") {
  FileTimerTable table(FileTimerLimits{2, 100});
  CHECK(table.apply(timer(10, "a", 5), 0) == TimerApplied::Set);
  CHECK(table.apply(timer(10, "b", 50), 0) == TimerApplied::Set);
  const auto expired = table.takeExpired(10);
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].scopeId == "a");
  CHECK(table.size() == 0);  // every timer of the expired process goes
  CHECK(table.apply(timer(12, "c"), 0) == TimerApplied::Set);
  CHECK(table.apply(timer(12, "d"), 0) == TimerApplied::Set);
  table.clear();
  CHECK(table.apply(timer(12, "e"), 0) == TimerApplied::Set);
}
