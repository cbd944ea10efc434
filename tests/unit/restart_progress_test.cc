// RestartProgress (--max-no-progress-restarts): which failed attempts count as restarts
// without progress, and when restarting stops.

#include "launcher/stall/restart_progress.h"

#include <catch2/catch.hpp>
#include <optional>
#include <vector>

using pltrun::highestCounter;
using pltrun::RankEvidence;
using pltrun::RestartProgress;

TEST_CASE("restart progress: a crash at the same step every attempt stops after K restarts", "[restart_progress]") {
  RestartProgress progress(3);
  CHECK_FALSE(progress.stopAfter(0, 5));  // the first counters set the mark
  CHECK_FALSE(progress.stopAfter(1, 5));
  CHECK_FALSE(progress.stopAfter(2, 4));  // lower is no progress either
  CHECK(progress.withoutProgress() == 2);
  CHECK(progress.stopAfter(3, 5));
  CHECK(progress.best() == 5);
  CHECK(progress.bestAttempt() == 0);
  CHECK(progress.withoutProgress() == 3);
  CHECK(progress.line() ==
        "no progress in 3 restarts in a row: no rank passed step 5 (reached in attempt 0); not restarting again "
        "(--max-no-progress-restarts 3)");
  CHECK(progress.line("round").find("(reached in round 0)") != std::string::npos);
  const nlohmann::json json = progress.json();
  CHECK(json["counter"] == 5);
  CHECK(json["counter_attempt"] == 0);
  CHECK(json["restarts_without_progress"] == 3);
  CHECK(json["max_no_progress_restarts"] == 3);
}

TEST_CASE("restart progress: passing the highest counter starts the count again", "[restart_progress]") {
  RestartProgress progress(2);
  CHECK_FALSE(progress.stopAfter(0, 10));
  CHECK_FALSE(progress.stopAfter(1, 10));
  CHECK(progress.withoutProgress() == 1);
  CHECK_FALSE(progress.stopAfter(2, 11));  // strictly greater: progress
  CHECK(progress.withoutProgress() == 0);
  CHECK(progress.best() == 11);
  CHECK(progress.bestAttempt() == 2);
  CHECK_FALSE(progress.stopAfter(3, 11));  // equal is not passing it
  CHECK(progress.stopAfter(4, 3));
}

TEST_CASE("restart progress: a resumed job counting on from its checkpoint step makes progress", "[restart_progress]") {
  // Each attempt loads the last checkpoint (every 10 steps) and crashes a little later.
  RestartProgress progress(1);
  for (int attempt = 0; attempt < 20; ++attempt) CHECK_FALSE(progress.stopAfter(attempt, 10LL * attempt + 7));
}

TEST_CASE("restart progress: without any counter the check does not apply", "[restart_progress]") {
  RestartProgress progress(1);
  for (int attempt = 0; attempt < 10; ++attempt) CHECK_FALSE(progress.stopAfter(attempt, std::nullopt));
  CHECK_FALSE(progress.best());
  CHECK(progress.withoutProgress() == 0);
  CHECK(progress.json()["counter"].is_null());
  // The first counters arm it; they are progress themselves.
  CHECK_FALSE(progress.stopAfter(10, 0));
  CHECK(progress.bestAttempt() == 10);
}

TEST_CASE("restart progress: an attempt that sent no counter after one that did made no progress",
          "[restart_progress]") {
  RestartProgress progress(2);
  CHECK_FALSE(progress.stopAfter(0, 7));
  CHECK_FALSE(progress.stopAfter(1, std::nullopt));  // crashed while loading its checkpoint
  CHECK(progress.stopAfter(2, std::nullopt));
  CHECK(progress.line() ==
        "no progress in 2 restarts in a row: no rank passed step 7 (reached in attempt 0); not restarting again "
        "(--max-no-progress-restarts 2)");
}

TEST_CASE("restart progress: 0 turns the check off", "[restart_progress]") {
  RestartProgress progress(0);
  for (int attempt = 0; attempt < 10; ++attempt) CHECK_FALSE(progress.stopAfter(attempt, 5));
}

TEST_CASE("restart progress: negative counters compare as numbers", "[restart_progress]") {
  RestartProgress progress(1);
  CHECK_FALSE(progress.stopAfter(0, -5));
  CHECK_FALSE(progress.stopAfter(1, -4));
  CHECK(progress.stopAfter(2, -4));
}

TEST_CASE("restart progress: the attempt's counter is the highest any rank reached", "[restart_progress]") {
  std::vector<RankEvidence> ranks(3);
  CHECK_FALSE(highestCounter(ranks));
  ranks[0].counter = 4;
  ranks[2].counter = 9;
  CHECK(highestCounter(ranks) == 9);
  // A rank whose last counter went down still reached its highest.
  ranks[1].counter = 2;
  ranks[1].highestCounter = 12;
  CHECK(highestCounter(ranks) == 12);
}
