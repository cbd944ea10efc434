#pragma once
// What the test worker's `env` mode writes (tests/helpers/test_worker.cc): the launcher-set
// variables of rank RANK in DIR/env_RANK.json, read back by the tests that check them.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

/// Rank `rank`'s variables; the test fails, naming the rank, when the file is missing or empty.
inline nlohmann::json workerEnvironment(const std::string& directory, int rank) {
  const std::string text = readFile(directory + "/env_" + std::to_string(rank) + ".json");
  INFO("env file of rank " << rank << ": " << text);
  REQUIRE(!text.empty());
  return nlohmann::json::parse(text);
}

inline nlohmann::json workerEnvironment(const TempDir& directory, int rank) {
  return workerEnvironment(directory.path(), rank);
}

}  // namespace pltrun::test
