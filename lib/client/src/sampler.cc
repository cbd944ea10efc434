#include "pltrun/sampler.h"

#include <numeric>
#include <string>

#include "pltrun/error.h"

namespace pltrun {
namespace {

// SplitMix64: tiny, fast, and fully specified, unlike std::shuffle, whose use of the
// engine differs between standard libraries. Every rank must draw the same numbers.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, bound), without modulo bias (rejection sampling).
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    std::uint64_t value;
    do {
      value = next();
    } while (value >= limit);
    return value % bound;
  }

 private:
  std::uint64_t state_;
};

}  // namespace

DistributedSampler::DistributedSampler(SamplerOptions options) : options_(options) {
  if (options_.worldSize < 1 || options_.rank < 0 || options_.rank >= options_.worldSize) {
    throw Error(ErrorCode::InvalidArgument, "sampler: rank " + std::to_string(options_.rank) +
                                                " is not a rank of a world of " + std::to_string(options_.worldSize));
  }
}

std::vector<std::uint64_t> DistributedSampler::globalOrder() const {
  std::vector<std::uint64_t> order(options_.datasetSize);
  std::iota(order.begin(), order.end(), 0);
  if (options_.shuffle && order.size() > 1) {
    // Fisher-Yates from a generator seeded by seed and epoch together.
    SplitMix64 random(options_.seed ^ (0x632BE59BD9B4E019ull * (epoch_ + 1)));
    for (std::uint64_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[random.below(i + 1)]);
  }
  return order;
}

std::uint64_t DistributedSampler::numSamples() const {
  const std::uint64_t size = options_.datasetSize, world = static_cast<std::uint64_t>(options_.worldSize);
  const std::uint64_t rank = static_cast<std::uint64_t>(options_.rank);
  if (options_.unequalShards) return size / world + (rank < size % world ? 1 : 0);
  if (options_.dropLast) return size / world;
  return (size + world - 1) / world;
}

std::vector<std::uint64_t> DistributedSampler::indices() const {
  std::vector<std::uint64_t> order = globalOrder();
  const std::uint64_t world = static_cast<std::uint64_t>(options_.worldSize);
  const std::uint64_t total = options_.unequalShards ? order.size() : numSamples() * world;
  // Pad by wrapping around to the start (again and again for a dataset smaller than the
  // world); or, with dropLast, total is already cut to a multiple of the world.
  if (total > order.size() && !order.empty()) {
    const std::uint64_t original = order.size();
    for (std::uint64_t i = 0; order.size() < total; ++i) order.push_back(order[i % original]);
  }
  std::vector<std::uint64_t> mine;
  mine.reserve(numSamples());
  for (std::uint64_t i = static_cast<std::uint64_t>(options_.rank); i < total; i += world) mine.push_back(order[i]);
  return mine;
}

}  // namespace pltrun
