/* A C user of the installed pltrun: the C API only (pltrun/pltrun.h). Built twice: by CMake
 * against pltrun::client_static, and by the C compiler with `pkg-config --cflags --libs
 * pltrun`. One line per rank:
 *   consumer-c rank=R world=W launched=L sum=S broadcast=B count=W samples=...
 * A world of one without a launcher; under pltrun, every rank's line. */
#include <pltrun/pltrun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(pltrun_status status, const char* what) {
  if (status != PLTRUN_OK) {
    fprintf(stderr, "consumer-c: %s failed (%d): %s\n", what, (int)status, pltrun_last_error());
    exit(1);
  }
}

int main(void) {
  pltrun_group* group = NULL;
  pltrun_context me;
  check(pltrun_group_join(&group), "pltrun_group_join");
  check(pltrun_group_context(group, &me), "pltrun_group_context");

  int mine = 100 + me.rank;
  int* all = calloc((size_t)me.world_size, sizeof(int));
  check(pltrun_all_gather(group, &mine, sizeof mine, all, 60000), "pltrun_all_gather");
  int sum = 0;
  for (int rank = 0; rank < me.world_size; ++rank) sum += all[rank];
  free(all);

  int value = me.rank == 0 ? 4242 : -1;
  check(pltrun_broadcast(group, &value, sizeof value, 0, 60000), "pltrun_broadcast");

  int64_t count = 0;
  check(pltrun_store_add(group, "consumer-c/count", 1, &count), "pltrun_store_add");
  check(pltrun_barrier(group, 60000), "pltrun_barrier");
  check(pltrun_store_add(group, "consumer-c/count", 0, &count), "pltrun_store_add");

  uint64_t n = pltrun_sampler_count(10, me.rank, me.world_size, 0, 0);
  uint64_t* indices = calloc((size_t)n, sizeof(uint64_t));
  check(pltrun_sampler_indices(10, me.rank, me.world_size, 0, 0, 0, 0, 0, indices), "pltrun_sampler_indices");
  char samples[256] = "";
  for (uint64_t i = 0; i < n; ++i) {
    char number[32];
    snprintf(number, sizeof number, "%s%llu", i ? "," : "", (unsigned long long)indices[i]);
    strncat(samples, number, sizeof samples - strlen(samples) - 1);
  }
  free(indices);

  printf("consumer-c rank=%d world=%d launched=%d sum=%d broadcast=%d count=%lld samples=%s\n", me.rank, me.world_size,
         me.launched, sum, value, (long long)count, samples);
  fflush(stdout);
  check(pltrun_barrier(group, 60000), "pltrun_barrier"); /* nobody leaves (and closes the store) early */
  pltrun_group_free(group);
  return 0;
}
