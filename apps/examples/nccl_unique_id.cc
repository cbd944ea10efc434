// Rank 0's real ncclGetUniqueId reaches every rank through pltrun's store. Each rank
// writes the 128 bytes it ended up with, in hex, to DIR/nccl_id_RANK (the test compares
// them). Needs NCCL, not a GPU.  pltrun --nproc-per-node 4 nccl_unique_id DIR

#include <pltrun/nccl.h>

#include <cstdio>
#include <fstream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: nccl_unique_id DIR\n");
    return 2;
  }
  auto group = pltrun::Group::join();
  ncclUniqueId id = pltrun::shareNcclUniqueId(*group, "world");
  ncclUniqueId second = pltrun::shareNcclUniqueId(*group, "second-communicator");
  std::string hex;
  char byte[3];
  for (char c : id.internal) {
    std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(c));
    hex += byte;
  }
  bool distinct = std::string(id.internal, sizeof id.internal) != std::string(second.internal, sizeof second.internal);
  std::ofstream(std::string(argv[1]) + "/nccl_id_" + std::to_string(group->rank()))
      << hex << (distinct ? " distinct" : " same");
  std::printf("rank %d: NCCL unique id %.16s... (%zu bytes)\n", group->rank(), hex.c_str(), sizeof id.internal);
  return 0;
}
