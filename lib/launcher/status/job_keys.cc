#include "launcher/status/job_keys.h"

#include <chrono>

#include "rendezvous/elastic/store_layout.h"

namespace pltrun {

namespace layout = rdzv::layout;

namespace {

void readIfPresent(const JobKeyReader& read, const std::string& name, JobKeys& keys) {
  if (std::optional<std::string> value = read(name)) keys[name] = std::move(*value);
}

void readRound(const JobKeyReader& read, int round, JobKeys& keys) {
  for (const std::string& name :
       {layout::count(round), layout::complete(round), layout::end(round), layout::missing(round)}) {
    readIfPresent(read, name, keys);
  }
  const int slots = slotCount(keys, layout::count(round));
  for (int slot = 1; slot <= slots; ++slot) {
    for (const std::string& name : {layout::slot(round, slot), layout::assign(round, slot), layout::state(round, slot),
                                    layout::beat(round, slot)}) {
      readIfPresent(read, name, keys);
    }
  }
}

}  // namespace

JobKeyReader storeKeyReader(Store& store, const std::string& runId) {
  return [&store, prefix = rdzv::jobKeyPrefix(runId)](const std::string& name) -> std::optional<std::string> {
    const std::string key = prefix + name;
    if (!store.check({key})) return std::nullopt;
    return store.get(key, std::chrono::seconds(10));
  };
}

JobKeys readJobKeys(const JobKeyReader& read) {
  JobKeys keys;
  for (const std::string& name : {layout::kRound, layout::kFailures, layout::kClosed, layout::kExclusions})
    readIfPresent(read, name, keys);
  if (!keys.count(layout::kRound)) return keys;
  const int round = keyInteger(keys, layout::kRound, 0);
  if (round > 0) readRound(read, round - 1, keys);
  readRound(read, round, keys);
  return keys;
}

JobKeysReader storeKeysReader(Store& store, const std::string& runId) {
  return [&store, read = storeKeyReader(store, runId),
          prefix = rdzv::jobKeyPrefix(runId)](const std::vector<std::string>& names) {
    JobKeys keys;
    std::vector<std::string> fullKeys;
    for (const std::string& name : names) fullKeys.push_back(prefix + name);
    if (!fullKeys.empty() && store.check(fullKeys)) {
      const std::vector<std::string> values = store.multiGet(fullKeys, std::chrono::seconds(10));
      for (size_t index = 0; index < names.size(); ++index) keys[names[index]] = values[index];
      return keys;
    }
    for (const std::string& name : names) readIfPresent(read, name, keys);
    return keys;
  };
}

JobKeys readHeartbeats(const JobKeysReader& readMany, int round, int slots) {
  std::vector<std::string> names;
  for (int slot = 1; slot <= slots; ++slot) names.push_back(layout::beat(round, slot));
  return readMany(names);
}

}  // namespace pltrun
