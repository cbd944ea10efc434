#pragma once
// NCCL bootstrap through the launcher's store, header-only: only programs that include
// this header need NCCL and CUDA; libpltrun itself never links them. Rank 0 calls
// ncclGetUniqueId, the 128 bytes reach every rank through the store, and every rank calls
// ncclCommInitRank: no MPI. Each communicator name has its own keys, so several
// communicators (and restarts, which get their own key space) never collide.
//
//   auto group = pltrun::Group::join();
//   int device = pltrun::selectCudaDevice(group->context());
//   ncclComm_t comm = pltrun::initNcclComm(*group, "world");

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "pltrun/error.h"
#include "pltrun/group.h"

namespace pltrun {

/// Makes the GPU LOCAL_RANK (modulo the visible devices: under pltrun --devices, the
/// launcher's chosen GPUs) current, and returns its index.
inline int selectCudaDevice(const Context& context) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    throw Error(ErrorCode::System, std::string("no CUDA device is visible: ") + cudaGetErrorString(status));
  }
  int device = context.localRank % count;
  status = cudaSetDevice(device);
  if (status != cudaSuccess) {
    throw Error(ErrorCode::System, "cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(status));
  }
  return device;
}

/// Rank 0's ncclUniqueId, the same on every rank, shared under `name` through the store.
inline ncclUniqueId shareNcclUniqueId(Group& group, const std::string& name,
                                      Group::Duration timeout = std::chrono::minutes(5)) {
  ncclUniqueId id{};
  if (group.rank() == 0) {
    ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess) {
      throw Error(ErrorCode::System, std::string("ncclGetUniqueId: ") + ncclGetErrorString(result));
    }
  }
  std::string bytes = group.broadcastNamed("nccl/" + name, std::string(id.internal, sizeof id.internal), 0, timeout);
  if (bytes.size() != sizeof id.internal) {
    throw Error(ErrorCode::Protocol, "NCCL unique id for '" + name + "' has " + std::to_string(bytes.size()) +
                                         " bytes instead of " + std::to_string(sizeof id.internal));
  }
  std::copy(bytes.begin(), bytes.end(), id.internal);
  return id;
}

/// A communicator over the whole group on the current CUDA device (call
/// selectCudaDevice first).
inline ncclComm_t initNcclComm(Group& group, const std::string& name = "world",
                               Group::Duration timeout = std::chrono::minutes(5)) {
  ncclUniqueId id = shareNcclUniqueId(group, name, timeout);
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclCommInitRank(&comm, group.worldSize(), id, group.rank());
  if (result != ncclSuccess) {
    throw Error(ErrorCode::System, "ncclCommInitRank (rank " + std::to_string(group.rank()) + " of " +
                                       std::to_string(group.worldSize()) + "): " + ncclGetErrorString(result));
  }
  return comm;
}

}  // namespace pltrun
