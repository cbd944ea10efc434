#include "launcher/status/job_keys.h"

#include <chrono>

namespace pltrun {

namespace {

void readIfPresent(const JobKeyReader& read, const std::string& name, JobKeys& keys) {
  if (std::optional<std::string> value = read(name)) keys[name] = std::move(*value);
}

void readRound(const JobKeyReader& read, int round, JobKeys& keys) {
  const std::string stem = "r" + std::to_string(round) + "/";
  for (const char* name : {"count", "complete", "end", "missing"}) readIfPresent(read, stem + name, keys);
  const int slots = keyInteger(keys, stem + "count", 0);
  for (int slot = 1; slot <= slots; ++slot) {
    for (const char* name : {"slot/", "assign/", "state/", "beat/"}) {
      readIfPresent(read, stem + name + std::to_string(slot), keys);
    }
  }
}

}  // namespace

JobKeyReader storeKeyReader(Store& store, const std::string& runId) {
  return [&store, prefix = "pltrun/rdzv/" + runId + "/"](const std::string& name) -> std::optional<std::string> {
    const std::string key = prefix + name;
    if (!store.check({key})) return std::nullopt;
    return store.get(key, std::chrono::seconds(10));
  };
}

JobKeys readJobKeys(const JobKeyReader& read) {
  JobKeys keys;
  for (const char* name : {"round", "failures", "closed"}) readIfPresent(read, name, keys);
  if (!keys.count("round")) return keys;
  const int round = keyInteger(keys, "round", 0);
  if (round > 0) readRound(read, round - 1, keys);
  readRound(read, round, keys);
  return keys;
}

JobKeys readHeartbeats(const JobKeyReader& read, int round, int slots) {
  JobKeys keys;
  for (int slot = 1; slot <= slots; ++slot) {
    readIfPresent(read, "r" + std::to_string(round) + "/beat/" + std::to_string(slot), keys);
  }
  return keys;
}

}  // namespace pltrun
