#pragma once
// Which samples each rank reads, so data follows the world size:
// every rank gets an equal share (padded by wrapping around, as torch's
// DistributedSampler and Clara's Horovod sharding do, or with the tail dropped), the
// order is shuffled globally each epoch from a shared seed (every rank computes the same
// permutation, on any platform), and validation may use unequal shards without padding.

#include <cstdint>
#include <vector>

namespace pltrun {

struct SamplerOptions {
  std::uint64_t datasetSize = 0;
  int rank = 0;
  int worldSize = 1;
  bool shuffle = true;
  std::uint64_t seed = 0;  ///< the same on every rank
  /// Equal shards: pad by wrapping around (false) or drop the tail that does not divide
  /// evenly (true).
  bool dropLast = false;
  /// Validation: no padding and no dropping; shards differ by at most one sample.
  bool unequalShards = false;
};

class DistributedSampler {
 public:
  /// Throws Error(InvalidArgument) for a rank outside the world or an empty world.
  explicit DistributedSampler(SamplerOptions options);

  /// Chooses the epoch's permutation (call at the start of every epoch, on every rank).
  void setEpoch(std::uint64_t epoch) { epoch_ = epoch; }
  /// This rank's sample indices for the current epoch, in the order to read them.
  std::vector<std::uint64_t> indices() const;
  /// How many indices() returns.
  std::uint64_t numSamples() const;
  /// The whole epoch's order before sharding: the same on every rank.
  std::vector<std::uint64_t> globalOrder() const;

 private:
  SamplerOptions options_;
  std::uint64_t epoch_ = 0;
};

}  // namespace pltrun
