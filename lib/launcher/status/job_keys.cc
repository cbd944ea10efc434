#include "launcher/status/job_keys.h"

#include <chrono>

namespace pltrun {

namespace {

std::string prefixOf(const std::string& runId) { return "pltrun/rdzv/" + runId + "/"; }

void readIfPresent(Store& store, const std::string& runId, const std::string& name, JobKeys& keys) {
  const std::string key = prefixOf(runId) + name;
  if (store.check({key})) keys[name] = store.get(key, std::chrono::seconds(10));
}

void readRound(Store& store, const std::string& runId, int round, JobKeys& keys) {
  const std::string stem = "r" + std::to_string(round) + "/";
  for (const char* name : {"count", "complete", "end", "missing"}) readIfPresent(store, runId, stem + name, keys);
  const int slots = keyInteger(keys, stem + "count", 0);
  for (int slot = 1; slot <= slots; ++slot) {
    for (const char* name : {"slot/", "assign/", "state/", "beat/"}) {
      readIfPresent(store, runId, stem + name + std::to_string(slot), keys);
    }
  }
}

}  // namespace

JobKeys readJobKeys(Store& store, const std::string& runId) {
  JobKeys keys;
  for (const char* name : {"round", "failures", "closed"}) readIfPresent(store, runId, name, keys);
  if (!keys.count("round")) return keys;
  const int round = keyInteger(keys, "round", 0);
  if (round > 0) readRound(store, runId, round - 1, keys);
  readRound(store, runId, round, keys);
  return keys;
}

JobKeys readHeartbeats(Store& store, const std::string& runId, int round, int slots) {
  JobKeys keys;
  for (int slot = 1; slot <= slots; ++slot) {
    readIfPresent(store, runId, "r" + std::to_string(round) + "/beat/" + std::to_string(slot), keys);
  }
  return keys;
}

}  // namespace pltrun
