/* The C API: the same as rank_info.cc, from C.  pltrun --nproc-per-node 4 build/apps/examples/rank_info_c */
#include <pltrun/pltrun.h>
#include <stdio.h>
#include <stdlib.h>

static void check(pltrun_status status, const char* what) {
  if (status != PLTRUN_OK) {
    fprintf(stderr, "%s failed (%d): %s\n", what, (int)status, pltrun_last_error());
    exit(1);
  }
}

int main(void) {
  pltrun_group* group = NULL;
  pltrun_context me;
  check(pltrun_group_join(&group), "pltrun_group_join");
  check(pltrun_group_context(group, &me), "pltrun_group_context");
  check(pltrun_barrier(group, 60000), "pltrun_barrier");

  int mine = 100 + me.rank;
  int* all = calloc((size_t)me.world_size, sizeof(int));
  check(pltrun_all_gather(group, &mine, sizeof mine, all, 60000), "pltrun_all_gather");
  int sum = 0;
  for (int rank = 0; rank < me.world_size; ++rank) sum += all[rank];

  double learning_rate = me.rank == 0 ? 0.1 : 0.0;
  check(pltrun_broadcast(group, &learning_rate, sizeof learning_rate, 0, 60000), "pltrun_broadcast");
  printf("rank %d of %d: sum of gathered values %d, broadcast learning rate %g\n", me.rank, me.world_size, sum,
         learning_rate);
  free(all);
  pltrun_group_free(group);
  return 0;
}
