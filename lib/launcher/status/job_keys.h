#pragma once
// `pltrun status`, the reading half: the job's keys from its rendezvous, read by name (a
// TCPStore lists nothing), each only if it is there so that a missing one neither blocks
// nor is created (never ADD, which would make it). Read-only: the job cannot tell it was
// looked at. The same reads serve a TCPStore and etcd, through a JobKeyReader.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/status/job_status.h"
#include "pltrun/store.h"

namespace pltrun {

/// The value of the job's key `name` ("r2/count", under "pltrun/rdzv/RUN_ID/"), or none
/// when it is not there.
using JobKeyReader = std::function<std::optional<std::string>(const std::string& name)>;

/// The keys of `names` that are there, in few requests: what a poll of many heartbeats uses.
using JobKeysReader = std::function<JobKeys(const std::vector<std::string>& names)>;

/// A TCPStore's reader: CHECK, then GET (a GET alone would wait for a missing key).
JobKeyReader storeKeyReader(Store& store, const std::string& runId);
/// A TCPStore's batch reader: one CHECK of them all, then one MULTI_GET; key by key only
/// while some are missing (a node that has not beaten yet).
JobKeysReader storeKeysReader(Store& store, const std::string& runId);

/// Every key evaluateJob() reads: the job's (round, failures, closed, exclusions) and those of the
/// newest round and the one before it (count, complete, end, missing, and per slot its
/// descriptor, assignment, state and heartbeat counter).
JobKeys readJobKeys(const JobKeyReader& read);

/// The heartbeat counters of `round`'s slots 1..`slots` ("r2/beat/1" -> "17"), for sampling.
JobKeys readHeartbeats(const JobKeysReader& readMany, int round, int slots);

}  // namespace pltrun
