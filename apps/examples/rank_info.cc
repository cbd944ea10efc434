// The library in ten lines: who am I, wait for everyone, share something, agree on a seed.
// Run it under the launcher:  pltrun --nproc-per-node 4 build/apps/examples/rank_info

#include <pltrun/group.h>

#include <cstdio>

int main() {
  auto group = pltrun::Group::join();  // reads RANK, WORLD_SIZE, ... and connects to the launcher's store
  const pltrun::Context& me = group->context();
  std::printf("rank %d of %d (local rank %d on node %d, restart %d)\n", me.rank, me.worldSize, me.localRank,
              me.nodeRank, me.restartCount);
  group->barrier();
  auto names = group->allGather("worker-" + std::to_string(me.rank));
  std::string seed = group->broadcast(me.rank == 0 ? "seed-1234" : "", 0);
  std::printf("rank %d: gathered %zu names (%s ... %s), seed %s\n", me.rank, names.size(), names.front().c_str(),
              names.back().c_str(), seed.c_str());
  return 0;
}
