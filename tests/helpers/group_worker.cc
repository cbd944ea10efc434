// A worker for the client-library tests under the real pltrun: joins the group, runs
// barriers, all-gathers and broadcasts, and writes what it got to
// DIR/group_RANK_RESTART for the test to compare. With --fail-rank R, rank R exits 9
// in the first attempt, after the first barrier, so the launcher restarts the group.

#include <pltrun/group.h>

#include <cstdio>
#include <cstring>
#include <fstream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: pltrun_group_worker DIR [--fail-rank R]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int failRank = argc >= 4 && std::strcmp(argv[2], "--fail-rank") == 0 ? std::atoi(argv[3]) : -1;
  auto group = pltrun::Group::join();
  const pltrun::Context& me = group->context();
  const std::string attempt = std::to_string(me.restartCount);

  group->barrier(std::chrono::seconds(60));
  if (me.rank == failRank && me.restartCount == 0) return 9;

  std::string report;
  for (int round = 0; round < 10; ++round) {
    auto all = group->allGather("r" + std::to_string(me.rank) + "." + std::to_string(round) + "a" + attempt,
                                std::chrono::seconds(60));
    for (const auto& part : all) report += part + ",";
    report += group->broadcast(me.rank == round % me.worldSize ? "from" + std::to_string(me.rank) : "ignored",
                               round % me.worldSize, std::chrono::seconds(60));
    report += ";";
  }
  group->barrier(std::chrono::seconds(60));
  std::ofstream(dir + "/group_" + std::to_string(me.rank) + "_" + attempt) << report;
  return 0;
}
