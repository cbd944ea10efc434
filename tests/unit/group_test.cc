// Group: barrier, broadcast, all-gather and named broadcast between N ranks run as N
// threads, each with its own client (InMemoryStore::connect) of one shared table, as
// separate processes would each hold their own connection to the launcher's store.

#include "pltrun/group.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pltrun/context.h"
#include "pltrun/error.h"
#include "pltrun/in_memory_store.h"

using pltrun::Context;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::Group;
using pltrun::InMemoryStore;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;

// Long enough never to fire in a passing test, short enough that a broken one fails
// instead of hanging.
constexpr Group::Duration kPatience = 20s;

Context contextFor(int rank, int worldSize, int restartCount = 0) {
  Context context;
  context.rank = rank;
  context.worldSize = worldSize;
  context.localRank = rank;
  context.localWorldSize = worldSize;
  context.restartCount = restartCount;
  context.launched = true;
  return context;
}

// One group per rank, each over its own client of `table`.
std::vector<std::unique_ptr<Group>> groupsFor(const InMemoryStore& table, int worldSize, int restartCount = 0) {
  std::vector<std::unique_ptr<Group>> groups;
  for (int rank = 0; rank < worldSize; ++rank) {
    std::shared_ptr<pltrun::Store> client = table.connect();
    groups.push_back(std::make_unique<Group>(contextFor(rank, worldSize, restartCount), client));
  }
  return groups;
}

// Runs body(rank) on one thread per rank and waits for all; rethrows the first exception a
// rank threw (Catch assertions stay on the main thread).
void runRanks(int worldSize, const std::function<void(int rank)>& body) {
  std::vector<std::exception_ptr> failures(worldSize);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < worldSize; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        body(rank);
      } catch (...) {
        failures[rank] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < worldSize; ++rank) {
    INFO("rank " << rank);
    if (failures[rank]) std::rethrow_exception(failures[rank]);
  }
}

// The error `call` throws, if any.
template <typename Call>
std::optional<Error> errorOf(Call call) {
  try {
    call();
  } catch (const Error& error) {
    return error;
  }
  return std::nullopt;
}

// Blocks until `count` threads have called it (so that ranks start a collective together).
class StartLine {
 public:
  explicit StartLine(int count) : remaining_(count) {}
  void arrive() {
    remaining_.fetch_sub(1);
    while (remaining_.load() > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> remaining_;
};

}  // namespace

TEST_CASE("barrier waits for the last rank", "[group]") {
  constexpr int kWorld = 4;
  InMemoryStore table;
  auto groups = groupsFor(table, kWorld);
  // Each round a different rank is late; nobody may leave before it arrived.
  for (int late = 0; late < kWorld; ++late) {
    INFO("late rank " << late);
    std::atomic<int> arrived{0};
    std::vector<int> arrivedWhenPassed(kWorld, -1);
    std::vector<Clock::time_point> passed(kWorld);
    Clock::time_point lateArrival;
    runRanks(kWorld, [&](int rank) {
      if (rank == late) {
        std::this_thread::sleep_for(300ms);
        lateArrival = Clock::now();
      }
      arrived.fetch_add(1);
      groups[rank]->barrier(kPatience);
      passed[rank] = Clock::now();
      arrivedWhenPassed[rank] = arrived.load();
    });
    for (int rank = 0; rank < kWorld; ++rank) {
      INFO("rank " << rank);
      CHECK(arrivedWhenPassed[rank] == kWorld);
      CHECK(passed[rank] >= lateArrival);
    }
  }
}

TEST_CASE("barrier in a row: no rank laps another", "[group]") {
  constexpr int kWorld = 5, kRounds = 30;
  InMemoryStore table;
  auto groups = groupsFor(table, kWorld);
  std::vector<std::atomic<int>> arrivals(kRounds);
  std::atomic<bool> lapped{false};
  runRanks(kWorld, [&](int rank) {
    for (int round = 0; round < kRounds; ++round) {
      if ((round + rank) % 7 == 0) std::this_thread::sleep_for(2ms);
      arrivals[round].fetch_add(1);
      groups[rank]->barrier(kPatience);
      if (arrivals[round].load() != kWorld) lapped = true;
    }
  });
  CHECK_FALSE(lapped.load());
}

TEST_CASE("barrier times out when one rank never comes, saying how many arrived", "[group]") {
  for (int world : {2, 3, 5}) {
    INFO("world " << world);
    InMemoryStore table;
    auto groups = groupsFor(table, world);
    const int absent = world - 1;
    StartLine start(world - 1);
    std::vector<std::optional<Error>> errors(world);
    std::vector<Clock::duration> waited(world);
    runRanks(world, [&](int rank) {
      if (rank == absent) return;
      start.arrive();
      const auto begin = Clock::now();
      errors[rank] = errorOf([&] { groups[rank]->barrier(400ms); });
      waited[rank] = Clock::now() - begin;
    });
    const std::string expected = std::to_string(world - 1) + " of " + std::to_string(world) + " ranks arrived";
    for (int rank = 0; rank < absent; ++rank) {
      INFO("rank " << rank);
      REQUIRE(errors[rank]);
      CHECK(errors[rank]->code() == ErrorCode::Timeout);
      CHECK_THAT(errors[rank]->what(), Catch::Contains(expected));
      CHECK(waited[rank] >= 350ms);
    }
  }
}

TEST_CASE("broadcast gives every rank the root's bytes", "[group]") {
  constexpr int kWorld = 4;
  const std::string binary("\0id\0\xff\x01\0tail\0", 12);
  std::string blob(70000, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 31 % 256);
  for (int root : {0, 2}) {
    for (const std::string* payload : std::vector<const std::string*>{&binary, &blob}) {
      INFO("root " << root << ", " << payload->size() << " bytes");
      InMemoryStore table;
      auto groups = groupsFor(table, kWorld);
      std::vector<std::string> received(kWorld);
      runRanks(kWorld, [&](int rank) {
        // Non-roots pass something else, which must be ignored; the root comes last.
        if (rank == root) std::this_thread::sleep_for(50ms);
        received[rank] =
            groups[rank]->broadcast(rank == root ? *payload : "rank " + std::to_string(rank), root, kPatience);
      });
      for (int rank = 0; rank < kWorld; ++rank) {
        INFO("rank " << rank);
        CHECK(received[rank].size() == payload->size());
        CHECK(received[rank] == *payload);
      }
    }
  }
}

TEST_CASE("allGather returns every rank's bytes in rank order", "[group]") {
  constexpr int kWorld = 5;
  InMemoryStore table;
  auto groups = groupsFor(table, kWorld);
  auto valueOf = [](int rank) { return std::string("\0r", 2) + std::to_string(rank) + std::string(rank, '\0'); };
  std::vector<std::vector<std::string>> gathered(kWorld);
  runRanks(kWorld, [&](int rank) {
    // Arrive in reverse rank order, so that rank order is not arrival order.
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * (kWorld - rank)));
    gathered[rank] = groups[rank]->allGather(valueOf(rank), kPatience);
  });
  std::vector<std::string> expected;
  for (int rank = 0; rank < kWorld; ++rank) expected.push_back(valueOf(rank));
  for (int rank = 0; rank < kWorld; ++rank) {
    INFO("rank " << rank);
    CHECK(gathered[rank] == expected);
  }
}

TEST_CASE("consecutive broadcasts and all-gathers each carry their own values", "[group]") {
  constexpr int kWorld = 3, kRounds = 10;
  InMemoryStore table;
  auto groups = groupsFor(table, kWorld);
  std::vector<std::vector<std::string>> broadcasts(kWorld), gathers(kWorld);
  runRanks(kWorld, [&](int rank) {
    for (int round = 0; round < kRounds; ++round) {
      const std::string value = "b" + std::to_string(round) + "@" + std::to_string(rank);
      broadcasts[rank].push_back(groups[rank]->broadcast(value, round % kWorld, kPatience));
    }
    for (int round = 0; round < kRounds; ++round) {
      std::string joined;
      for (const std::string& value : groups[rank]->allGather("g" + std::to_string(round), kPatience)) joined += value;
      gathers[rank].push_back(joined);
    }
  });
  for (int rank = 0; rank < kWorld; ++rank) {
    for (int round = 0; round < kRounds; ++round) {
      INFO("rank " << rank << ", round " << round);
      CHECK(broadcasts[rank][round] == "b" + std::to_string(round) + "@" + std::to_string(round % kWorld));
      const std::string g = "g" + std::to_string(round);
      CHECK(gathers[rank][round] == g + g + g);
    }
  }
}

TEST_CASE("20 mixed collectives in a row stay in step", "[group]") {
  constexpr int kWorld = 4, kOperations = 20;
  InMemoryStore table;
  auto groups = groupsFor(table, kWorld);
  // results[rank][operation]: what the operation returned there, flattened to one string.
  std::vector<std::vector<std::string>> results(kWorld, std::vector<std::string>(kOperations));
  std::vector<std::vector<int>> arrivedAtBarrier(kWorld, std::vector<int>(kOperations, -1));
  std::vector<std::atomic<int>> barrierArrivals(kOperations);
  runRanks(kWorld, [&](int rank) {
    Group& group = *groups[rank];
    for (int op = 0; op < kOperations; ++op) {
      if ((rank * 7 + op) % 3 == 0) std::this_thread::sleep_for(3ms);
      const std::string tag = "op" + std::to_string(op) + "@" + std::to_string(rank);
      const int root = op % kWorld;
      switch (op % 4) {
        case 0:
          barrierArrivals[op].fetch_add(1);
          group.barrier(kPatience);
          arrivedAtBarrier[rank][op] = barrierArrivals[op].load();
          results[rank][op] = "barrier";
          break;
        case 1:
          results[rank][op] = group.broadcast(tag, root, kPatience);
          break;
        case 2: {
          std::string joined;
          for (const std::string& value : group.allGather(tag, kPatience)) joined += value + "|";
          results[rank][op] = joined;
          break;
        }
        case 3:
          results[rank][op] = group.broadcastNamed("config", tag, root, kPatience);
          break;
      }
    }
  });
  for (int op = 0; op < kOperations; ++op) {
    const int root = op % kWorld;
    std::string expected;
    switch (op % 4) {
      case 0:
        expected = "barrier";
        break;
      case 1:
      case 3:
        expected = "op" + std::to_string(op) + "@" + std::to_string(root);
        break;
      case 2:
        for (int rank = 0; rank < kWorld; ++rank)
          expected += "op" + std::to_string(op) + "@" + std::to_string(rank) + "|";
        break;
    }
    for (int rank = 0; rank < kWorld; ++rank) {
      INFO("operation " << op << ", rank " << rank);
      CHECK(results[rank][op] == expected);
      if (op % 4 == 0) CHECK(arrivedAtBarrier[rank][op] == kWorld);
    }
  }
}

TEST_CASE("each restart has its own key space", "[group]") {
  InMemoryStore table;
  auto attempt0 = groupsFor(table, 2, 0);
  auto attempt1 = groupsFor(table, 2, 1);

  SECTION("a broadcast of attempt 0 is not read by attempt 1") {
    CHECK(attempt0[0]->broadcast("old", 0, kPatience) == "old");
    auto error = errorOf([&] { attempt1[1]->broadcast("", 0, 300ms); });
    REQUIRE(error);
    CHECK(error->code() == ErrorCode::Timeout);
    // Attempt 0's own peer does read it: the key was there all along.
    CHECK(attempt0[1]->broadcast("", 0, kPatience) == "old");
    // A fresh attempt 1 meets in its own space.
    auto fresh = groupsFor(table, 2, 1);
    CHECK(fresh[0]->broadcast("new", 0, kPatience) == "new");
    CHECK(fresh[1]->broadcast("", 0, kPatience) == "new");
  }

  SECTION("barrier arrivals of two attempts do not add up") {
    std::vector<std::optional<Error>> errors(2);
    StartLine start(2);
    runRanks(2, [&](int rank) {
      start.arrive();
      // Rank 0 of attempt 0 and rank 1 of attempt 1: together they would make a world of 2.
      Group& group = rank == 0 ? *attempt0[0] : *attempt1[1];
      errors[rank] = errorOf([&] { group.barrier(300ms); });
    });
    for (int rank = 0; rank < 2; ++rank) {
      INFO("rank " << rank);
      REQUIRE(errors[rank]);
      CHECK(errors[rank]->code() == ErrorCode::Timeout);
      CHECK_THAT(errors[rank]->what(), Catch::Contains("1 of 2 ranks arrived"));
    }
  }

  SECTION("attempt 1 does not see attempt 10 or 11") {
    auto attempt10 = groupsFor(table, 2, 10);
    auto attempt11 = groupsFor(table, 2, 11);
    attempt10[0]->broadcastNamed("id", "ten", 0, kPatience);
    attempt11[0]->broadcastNamed("id", "eleven", 0, kPatience);
    auto error = errorOf([&] { attempt1[1]->broadcastNamed("id", "", 0, 200ms); });
    REQUIRE(error);
    CHECK(error->code() == ErrorCode::Timeout);
    CHECK(attempt10[1]->broadcastNamed("id", "", 0, kPatience) == "ten");
    CHECK(attempt11[1]->broadcastNamed("id", "", 0, kPatience) == "eleven");
  }
}

TEST_CASE("broadcastNamed counts calls per name", "[group]") {
  constexpr int kWorld = 3, kCalls = 3;
  InMemoryStore table;
  auto groups = groupsFor(table, kWorld);
  // Name "a" has root 0, name "b" root 1. Every rank makes the same calls per name, but
  // the two names interleave differently on each rank, with an unnamed broadcast between.
  std::vector<std::vector<std::string>> gotA(kWorld), gotB(kWorld);
  std::vector<std::string> gotUnnamed(kWorld);
  runRanks(kWorld, [&](int rank) {
    Group& group = *groups[rank];
    auto callA = [&](int n) { gotA[rank].push_back(group.broadcastNamed("a", "a" + std::to_string(n), 0, kPatience)); };
    auto callB = [&](int n) { gotB[rank].push_back(group.broadcastNamed("b", "b" + std::to_string(n), 1, kPatience)); };
    switch (rank) {
      case 0:  // a a a, unnamed, b b b
        for (int n = 0; n < kCalls; ++n) callA(n);
        gotUnnamed[rank] = group.broadcast("unnamed", 0, kPatience);
        for (int n = 0; n < kCalls; ++n) callB(n);
        break;
      case 1:  // b b b, a a a, unnamed
        for (int n = 0; n < kCalls; ++n) callB(n);
        for (int n = 0; n < kCalls; ++n) callA(n);
        gotUnnamed[rank] = group.broadcast("", 0, kPatience);
        break;
      default:  // unnamed, then a b a b a b
        gotUnnamed[rank] = group.broadcast("", 0, kPatience);
        for (int n = 0; n < kCalls; ++n) {
          callA(n);
          callB(n);
        }
        break;
    }
  });
  for (int rank = 0; rank < kWorld; ++rank) {
    INFO("rank " << rank);
    CHECK(gotA[rank] == std::vector<std::string>{"a0", "a1", "a2"});
    CHECK(gotB[rank] == std::vector<std::string>{"b0", "b1", "b2"});
    CHECK(gotUnnamed[rank] == "unnamed");
  }
}

TEST_CASE("a root outside the world is rejected", "[group]") {
  InMemoryStore table;
  auto groups = groupsFor(table, 3);
  for (int root : {-1, 3, 4, 99}) {
    INFO("root " << root);
    for (int rank = 0; rank < 3; ++rank) {
      auto broadcast = errorOf([&] { groups[rank]->broadcast("x", root, 100ms); });
      REQUIRE(broadcast);
      CHECK(broadcast->code() == ErrorCode::InvalidArgument);
      CHECK_THAT(broadcast->what(), Catch::Contains(std::to_string(root)));
      auto named = errorOf([&] { groups[rank]->broadcastNamed("n", "x", root, 100ms); });
      REQUIRE(named);
      CHECK(named->code() == ErrorCode::InvalidArgument);
    }
  }
}

TEST_CASE("a world of one needs no other rank", "[group]") {
  InMemoryStore table;
  Group group(contextFor(0, 1), table.connect());
  CHECK(group.rank() == 0);
  CHECK(group.worldSize() == 1);
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    CHECK_NOTHROW(group.barrier(200ms));
    CHECK(group.broadcast(std::string("a\0b", 3), 0, 200ms) == std::string("a\0b", 3));
    CHECK(group.allGather("mine", 200ms) == std::vector<std::string>{"mine"});
    CHECK(group.broadcastNamed("n", "named", 0, 200ms) == "named");
  }

  // Without a launcher, join gives the same over its own in-memory store.
  auto joined = Group::join(Context{});
  REQUIRE(joined);
  CHECK(joined->worldSize() == 1);
  CHECK_NOTHROW(joined->barrier(200ms));
  CHECK(joined->allGather("solo", 200ms) == std::vector<std::string>{"solo"});
  CHECK(joined->broadcast("solo", 0, 200ms) == "solo");
}
