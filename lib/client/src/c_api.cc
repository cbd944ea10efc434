// The C API: a thin shell over the C++ core that turns exceptions into status codes.

#include <cstring>
#include <memory>
#include <string>

#include "pltrun/error.h"
#include "pltrun/group.h"
#include "pltrun/heartbeat.h"
#include "pltrun/pltrun.h"
#include "pltrun/sampler.h"

struct pltrun_group {
  std::unique_ptr<pltrun::Group> group;
};

namespace {

thread_local std::string lastError;

pltrun_status statusFor(pltrun::ErrorCode code) {
  switch (code) {
    case pltrun::ErrorCode::InvalidArgument:
      return PLTRUN_ERROR_INVALID_ARGUMENT;
    case pltrun::ErrorCode::NotFound:
      return PLTRUN_ERROR_NOT_FOUND;
    case pltrun::ErrorCode::Timeout:
      return PLTRUN_ERROR_TIMEOUT;
    case pltrun::ErrorCode::Network:
      return PLTRUN_ERROR_NETWORK;
    case pltrun::ErrorCode::Protocol:
      return PLTRUN_ERROR_PROTOCOL;
    case pltrun::ErrorCode::PermissionDenied:
      return PLTRUN_ERROR_PERMISSION_DENIED;
    case pltrun::ErrorCode::System:
      return PLTRUN_ERROR_SYSTEM;
  }
  return PLTRUN_ERROR_SYSTEM;
}

// Runs `action`, mapping every exception to a status and remembering its message.
template <typename Action>
pltrun_status guarded(Action action) {
  try {
    lastError.clear();
    return action();
  } catch (const pltrun::Error& error) {
    lastError = error.what();
    return statusFor(error.code());
  } catch (const std::exception& error) {
    lastError = error.what();
    return PLTRUN_ERROR_SYSTEM;
  }
}

pltrun_status invalid(const std::string& message) {
  lastError = message;
  return PLTRUN_ERROR_INVALID_ARGUMENT;
}

void copyContext(const pltrun::Context& from, pltrun_context* to) {
  to->rank = from.rank;
  to->local_rank = from.localRank;
  to->world_size = from.worldSize;
  to->local_world_size = from.localWorldSize;
  to->node_rank = from.nodeRank;
  to->num_nodes = from.numNodes;
  to->restart_count = from.restartCount;
  to->launched = from.launched ? 1 : 0;
}

// Negative means "no wait"; INT64_MAX means "forever" (the stores saturate deadlines).
pltrun::SamplerOptions samplerOptions(uint64_t datasetSize, int rank, int worldSize, int dropLast, int unequalShards) {
  pltrun::SamplerOptions options;
  options.datasetSize = datasetSize;
  options.rank = rank;
  options.worldSize = worldSize;
  options.dropLast = dropLast != 0;
  options.unequalShards = unequalShards != 0;
  return options;
}

std::chrono::milliseconds milliseconds(int64_t value) { return std::chrono::milliseconds(value < 0 ? 0 : value); }

}  // namespace

extern "C" {

const char* pltrun_last_error(void) { return lastError.c_str(); }

pltrun_status pltrun_context_from_environment(pltrun_context* context) {
  if (context == nullptr) return invalid("pltrun_context_from_environment: context is NULL");
  return guarded([&] {
    copyContext(pltrun::Context::fromEnvironment(), context);
    return PLTRUN_OK;
  });
}

pltrun_status pltrun_group_join(pltrun_group** group) {
  if (group == nullptr) return invalid("pltrun_group_join: group is NULL");
  return guarded([&] {
    *group = new pltrun_group{pltrun::Group::join()};
    return PLTRUN_OK;
  });
}

void pltrun_group_free(pltrun_group* group) { delete group; }

pltrun_status pltrun_group_context(const pltrun_group* group, pltrun_context* context) {
  if (group == nullptr || context == nullptr) return invalid("pltrun_group_context: NULL argument");
  copyContext(group->group->context(), context);
  return PLTRUN_OK;
}

pltrun_status pltrun_barrier(pltrun_group* group, int64_t timeout_ms) {
  if (group == nullptr) return invalid("pltrun_barrier: group is NULL");
  return guarded([&] {
    group->group->barrier(milliseconds(timeout_ms));
    return PLTRUN_OK;
  });
}

pltrun_status pltrun_broadcast(pltrun_group* group, void* buffer, size_t size, int root, int64_t timeout_ms) {
  if (group == nullptr || (buffer == nullptr && size > 0)) return invalid("pltrun_broadcast: NULL argument");
  return guarded([&] {
    std::string bytes =
        group->group->broadcast(std::string(static_cast<char*>(buffer), size), root, milliseconds(timeout_ms));
    if (bytes.size() != size) {
      throw pltrun::Error(pltrun::ErrorCode::InvalidArgument, "pltrun_broadcast: root sent " +
                                                                  std::to_string(bytes.size()) +
                                                                  " bytes, this rank expects " + std::to_string(size));
    }
    std::memcpy(buffer, bytes.data(), size);
    return PLTRUN_OK;
  });
}

pltrun_status pltrun_all_gather(pltrun_group* group, const void* send, size_t size, void* received,
                                int64_t timeout_ms) {
  if (group == nullptr || received == nullptr || (send == nullptr && size > 0)) {
    return invalid("pltrun_all_gather: NULL argument");
  }
  return guarded([&] {
    auto parts = group->group->allGather(std::string(static_cast<const char*>(send), size), milliseconds(timeout_ms));
    for (size_t rank = 0; rank < parts.size(); ++rank) {
      if (parts[rank].size() != size) {
        throw pltrun::Error(pltrun::ErrorCode::InvalidArgument, "pltrun_all_gather: rank " + std::to_string(rank) +
                                                                    " sent " + std::to_string(parts[rank].size()) +
                                                                    " bytes, this rank expects " +
                                                                    std::to_string(size));
      }
      std::memcpy(static_cast<char*>(received) + rank * size, parts[rank].data(), size);
    }
    return PLTRUN_OK;
  });
}

pltrun_status pltrun_store_set(pltrun_group* group, const char* key, const void* value, size_t size) {
  if (group == nullptr || key == nullptr || (value == nullptr && size > 0))
    return invalid("pltrun_store_set: NULL argument");
  return guarded([&] {
    group->group->store().set(key, std::string(static_cast<const char*>(value), size));
    return PLTRUN_OK;
  });
}

pltrun_status pltrun_store_get(pltrun_group* group, const char* key, void* value, size_t capacity, size_t* size,
                               int64_t timeout_ms) {
  if (group == nullptr || key == nullptr || size == nullptr || (value == nullptr && capacity > 0)) {
    return invalid("pltrun_store_get: NULL argument");
  }
  return guarded([&] {
    std::string bytes = group->group->store().get(key, milliseconds(timeout_ms));
    *size = bytes.size();
    std::memcpy(value, bytes.data(), std::min(capacity, bytes.size()));
    if (bytes.size() > capacity) {
      lastError = "pltrun_store_get: the value of '" + std::string(key) + "' has " + std::to_string(bytes.size()) +
                  " bytes, the buffer " + std::to_string(capacity);
      return PLTRUN_ERROR_BUFFER_TOO_SMALL;
    }
    return PLTRUN_OK;
  });
}

pltrun_status pltrun_store_add(pltrun_group* group, const char* key, int64_t delta, int64_t* result) {
  if (group == nullptr || key == nullptr) return invalid("pltrun_store_add: NULL argument");
  return guarded([&] {
    int64_t value = group->group->store().add(key, delta);
    if (result != nullptr) *result = value;
    return PLTRUN_OK;
  });
}

uint64_t pltrun_sampler_count(uint64_t dataset_size, int rank, int world_size, int drop_last, int unequal_shards) {
  try {
    return pltrun::DistributedSampler(samplerOptions(dataset_size, rank, world_size, drop_last, unequal_shards))
        .numSamples();
  } catch (const std::exception& error) {
    lastError = error.what();
    return 0;
  }
}

pltrun_status pltrun_sampler_indices(uint64_t dataset_size, int rank, int world_size, int shuffle, uint64_t seed,
                                     uint64_t epoch, int drop_last, int unequal_shards, uint64_t* indices) {
  if (indices == nullptr) return invalid("pltrun_sampler_indices: indices is NULL");
  return guarded([&] {
    pltrun::SamplerOptions options = samplerOptions(dataset_size, rank, world_size, drop_last, unequal_shards);
    options.shuffle = shuffle != 0;
    options.seed = seed;
    pltrun::DistributedSampler sampler(options);
    sampler.setEpoch(epoch);
    auto mine = sampler.indices();
    std::copy(mine.begin(), mine.end(), indices);
    return PLTRUN_OK;
  });
}

void pltrun_heartbeat(long long step) { pltrun::heartbeat(step); }

}  // extern "C"
