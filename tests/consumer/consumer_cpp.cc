// A C++ user of the installed pltrun (pltrun::client, libpltrun.so). One line per rank:
//   consumer-cpp rank=R world=W launched=L gathered=r0,r1,... broadcast=seed-42
//       samples=... batch=... error=InvalidArgument
// A world of one without a launcher; under pltrun, every rank's line.
#include <pltrun/context.h>
#include <pltrun/error.h>
#include <pltrun/group.h>
#include <pltrun/sampler.h>
#include <pltrun/scaling.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : ",") + part;
  return text;
}

}  // namespace

int main() {
  try {
    auto group = pltrun::Group::join();
    const pltrun::Context& me = group->context();
    group->barrier(std::chrono::seconds(60));
    std::vector<std::string> gathered = group->allGather("r" + std::to_string(me.rank), std::chrono::seconds(60));
    std::string seed = group->broadcast(me.rank == 0 ? "seed-42" : "wrong", 0, std::chrono::seconds(60));

    pltrun::SamplerOptions options;
    options.datasetSize = 10;
    options.rank = me.rank;
    options.worldSize = me.worldSize;
    options.shuffle = false;
    std::string samples;
    for (std::uint64_t index : pltrun::DistributedSampler(options).indices()) {
      samples += (samples.empty() ? "" : ",") + std::to_string(index);
    }
    std::int64_t batch = pltrun::effectiveBatchSize(7, 2, me.localWorldSize, me.numNodes);

    // pltrun::Error thrown inside libpltrun.so, caught here by type.
    std::string error = "none";
    try {
      options.rank = me.worldSize;
      pltrun::DistributedSampler invalid(options);
    } catch (const pltrun::Error& caught) {
      error = caught.code() == pltrun::ErrorCode::InvalidArgument ? "InvalidArgument" : "other";
    }

    std::printf("consumer-cpp rank=%d world=%d launched=%d gathered=%s broadcast=%s samples=%s batch=%lld error=%s\n",
                me.rank, me.worldSize, me.launched ? 1 : 0, joined(gathered).c_str(), seed.c_str(), samples.c_str(),
                static_cast<long long>(batch), error.c_str());
    std::fflush(stdout);
    group->barrier(std::chrono::seconds(60));  // nobody leaves (and closes the store) early
    return 0;
  } catch (const std::exception& failure) {
    std::fprintf(stderr, "consumer-cpp: %s\n", failure.what());
    return 1;
  }
}
