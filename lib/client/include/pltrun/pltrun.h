/* pltrun's C API: ranks, the launcher's store and group operations for C, Fortran
 * (ISO_C_BINDING) and Python-ctypes programs. Every call returns a status; the message of
 * the last failure on the calling thread is pltrun_last_error(). */
#ifndef PLTRUN_PLTRUN_H
#define PLTRUN_PLTRUN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pltrun_status {
  PLTRUN_OK = 0,
  PLTRUN_ERROR_INVALID_ARGUMENT = 1,
  PLTRUN_ERROR_NOT_FOUND = 2,
  PLTRUN_ERROR_TIMEOUT = 3,
  PLTRUN_ERROR_NETWORK = 4,
  PLTRUN_ERROR_PROTOCOL = 5,
  PLTRUN_ERROR_PERMISSION_DENIED = 6,
  PLTRUN_ERROR_SYSTEM = 7,
  PLTRUN_ERROR_BUFFER_TOO_SMALL = 8
} pltrun_status;

/* Where this process sits in the job (the launcher's environment). */
typedef struct pltrun_context {
  int rank, local_rank, world_size, local_world_size, node_rank, num_nodes, restart_count;
  int launched; /* 0: no launcher variables, a world of one */
} pltrun_context;

typedef struct pltrun_group pltrun_group;

/* The message of the last failed call on this thread ("" if none). */
const char* pltrun_last_error(void);

pltrun_status pltrun_context_from_environment(pltrun_context* context);

/* Joins the group of the environment's context (connects to the launcher's store). */
pltrun_status pltrun_group_join(pltrun_group** group);
void pltrun_group_free(pltrun_group* group);
pltrun_status pltrun_group_context(const pltrun_group* group, pltrun_context* context);

pltrun_status pltrun_barrier(pltrun_group* group, int64_t timeout_ms);
/* Every rank's `buffer` of `size` bytes gets root's content. */
pltrun_status pltrun_broadcast(pltrun_group* group, void* buffer, size_t size, int root, int64_t timeout_ms);
/* Every rank sends `size` bytes; `received` (world_size × size bytes) gets them in rank order. */
pltrun_status pltrun_all_gather(pltrun_group* group, const void* send, size_t size, void* received, int64_t timeout_ms);

/* The group's store (keys live under this attempt's prefix). */
pltrun_status pltrun_store_set(pltrun_group* group, const char* key, const void* value, size_t size);
/* Waits up to timeout_ms; copies at most capacity bytes; *size is the value's full size
 * (PLTRUN_ERROR_BUFFER_TOO_SMALL when it does not fit). */
pltrun_status pltrun_store_get(pltrun_group* group, const char* key, void* value, size_t capacity, size_t* size,
                               int64_t timeout_ms);
pltrun_status pltrun_store_add(pltrun_group* group, const char* key, int64_t delta, int64_t* result);

/* This rank's sample indices (torch DistributedSampler semantics, see pltrun/sampler.h).
 * `indices` must hold pltrun_sampler_count(...) entries. */
uint64_t pltrun_sampler_count(uint64_t dataset_size, int rank, int world_size, int drop_last, int unequal_shards);
pltrun_status pltrun_sampler_indices(uint64_t dataset_size, int rank, int world_size, int shuffle, uint64_t seed,
                                     uint64_t epoch, int drop_last, int unequal_shards, uint64_t* indices);

/* One heartbeat for pltrun's hang detection (pltrun/heartbeat.h): `step` is the progress
 * counter, a negative step a heartbeat without one. A few microseconds; never blocks, has
 * no status (it cannot fail in a way the caller could act on), and does nothing outside
 * pltrun (PLTRUN_HEARTBEAT unset). */
void pltrun_heartbeat(long long step);

#ifdef __cplusplus
}
#endif

#endif /* PLTRUN_PLTRUN_H */
