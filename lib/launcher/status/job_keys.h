#pragma once
// `pltrun status`, the reading half: the job's keys from the rendezvous store, read by name
// (a TCPStore lists nothing), each checked before it is read so that a missing one neither
// blocks nor is created (never ADD, which would make it). Read-only: the job cannot tell it
// was looked at.

#include <string>

#include "launcher/status/job_status.h"
#include "pltrun/store.h"

namespace pltrun {

/// Every key evaluateJob() reads: the job's (round, failures, closed) and those of the
/// newest round and the one before it (count, complete, end, missing, and per slot its descriptor,
/// assignment, state and heartbeat counter).
JobKeys readJobKeys(Store& store, const std::string& runId);

/// The heartbeat counters of `round`'s slots 1..`slots` ("r2/beat/1" -> "17"), for sampling.
JobKeys readHeartbeats(Store& store, const std::string& runId, int round, int slots);

}  // namespace pltrun
