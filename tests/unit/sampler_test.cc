// DistributedSampler: equal (padded or dropped) and unequal shards for every world size
// from 1 to 16 and datasets smaller and larger than the world, one global permutation per
// epoch shared by every rank, and that permutation pinned so it cannot drift between
// platforms or releases.

#include "pltrun/sampler.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "pltrun/error.h"

using pltrun::DistributedSampler;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::SamplerOptions;

namespace {

using Indices = std::vector<std::uint64_t>;

// 0 is included on purpose: an empty dataset gives every rank zero samples and no indices.
const std::uint64_t kDatasetSizes[] = {0, 1, 2, 3, 5, 7, 15, 16, 17, 31, 100, 1000};
constexpr int kMaxWorld = 16;
const std::uint64_t kEpochs[] = {0, 3};

struct Mode {
  bool shuffle;
  bool dropLast;
  bool unequalShards;
};

SamplerOptions optionsFor(std::uint64_t size, int rank, int world, Mode mode, std::uint64_t seed = 1234) {
  SamplerOptions options;
  options.datasetSize = size;
  options.rank = rank;
  options.worldSize = world;
  options.shuffle = mode.shuffle;
  options.seed = seed;
  options.dropLast = mode.dropLast;
  options.unequalShards = mode.unequalShards;
  return options;
}

// One sampler per rank, each built on its own as on separate processes, all at `epoch`.
std::vector<DistributedSampler> samplersFor(std::uint64_t size, int world, Mode mode, std::uint64_t epoch,
                                            std::uint64_t seed = 1234) {
  std::vector<DistributedSampler> samplers;
  for (int rank = 0; rank < world; ++rank) {
    samplers.emplace_back(optionsFor(size, rank, world, mode, seed));
    samplers.back().setEpoch(epoch);
  }
  return samplers;
}

Indices orderOf(std::uint64_t size, std::uint64_t seed, std::uint64_t epoch, bool shuffle = true) {
  SamplerOptions options;
  options.datasetSize = size;
  options.seed = seed;
  options.shuffle = shuffle;
  DistributedSampler sampler(options);
  sampler.setEpoch(epoch);
  return sampler.globalOrder();
}

bool isPermutation(const Indices& order, std::uint64_t size) {
  Indices sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (std::uint64_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != i) return false;
  }
  return sorted.size() == size;
}

void requireInvalidArgument(const SamplerOptions& options) {
  try {
    DistributedSampler sampler(options);
    FAIL("no error for rank " << options.rank << " of world " << options.worldSize);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(error.what(),
               Catch::Contains(std::to_string(options.rank)) && Catch::Contains(std::to_string(options.worldSize)));
  }
}

}  // namespace

TEST_CASE("every rank computes the same global order, a permutation", "[sampler]") {
  for (bool shuffle : {true, false}) {
    for (std::uint64_t size : kDatasetSizes) {
      for (int world = 1; world <= kMaxWorld; ++world) {
        for (std::uint64_t epoch : kEpochs) {
          INFO("shuffle " << shuffle << ", dataset " << size << ", world " << world << ", epoch " << epoch);
          auto samplers = samplersFor(size, world, {shuffle, false, false}, epoch);
          const Indices order = samplers.front().globalOrder();
          REQUIRE(isPermutation(order, size));
          for (const DistributedSampler& sampler : samplers) REQUIRE(sampler.globalOrder() == order);
        }
      }
    }
  }
}

TEST_CASE("equal shards: ceil(N/W) each, padded by wrapping around the epoch's order", "[sampler]") {
  for (std::uint64_t size : kDatasetSizes) {
    for (int world = 1; world <= kMaxWorld; ++world) {
      for (std::uint64_t epoch : kEpochs) {
        INFO("dataset " << size << ", world " << world << ", epoch " << epoch);
        const std::uint64_t W = static_cast<std::uint64_t>(world);
        const std::uint64_t expected = (size + W - 1) / W;
        auto samplers = samplersFor(size, world, {true, false, false}, epoch);
        const Indices order = samplers.front().globalOrder();
        std::set<std::uint64_t> covered;
        for (int rank = 0; rank < world; ++rank) {
          INFO("rank " << rank);
          const Indices mine = samplers[rank].indices();
          REQUIRE(samplers[rank].numSamples() == expected);
          REQUIRE(mine.size() == expected);
          // Rank r reads positions r, r+W, r+2W, ... of the order padded by wrapping to its start.
          for (std::uint64_t k = 0; k < mine.size(); ++k) {
            const std::uint64_t position = static_cast<std::uint64_t>(rank) + k * W;
            REQUIRE(mine[k] == order[position % size]);
          }
          covered.insert(mine.begin(), mine.end());
        }
        // Every sample is read at least once each epoch.
        REQUIRE(covered.size() == size);
        if (size > 0) REQUIRE(*covered.rbegin() == size - 1);
      }
    }
  }
}

TEST_CASE("equal shards: the padding is the start of the epoch's order", "[sampler]") {
  // 10 samples on 4 ranks: 3 each, 12 in all; the last two positions repeat order[0], order[1].
  auto samplers = samplersFor(10, 4, {true, false, false}, 1, 7);
  const Indices order = samplers.front().globalOrder();
  CHECK(samplers[0].indices() == Indices{order[0], order[4], order[8]});
  CHECK(samplers[1].indices() == Indices{order[1], order[5], order[9]});
  CHECK(samplers[2].indices() == Indices{order[2], order[6], order[0]});
  CHECK(samplers[3].indices() == Indices{order[3], order[7], order[1]});

  // 3 samples on 8 ranks: the order repeats again and again.
  auto small = samplersFor(3, 8, {true, false, false}, 0, 7);
  const Indices smallOrder = small.front().globalOrder();
  for (int rank = 0; rank < 8; ++rank) CHECK(small[rank].indices() == Indices{smallOrder[rank % 3]});
}

TEST_CASE("dropLast: floor(N/W) each, no sample twice, the tail of the order dropped", "[sampler]") {
  for (std::uint64_t size : kDatasetSizes) {
    for (int world = 1; world <= kMaxWorld; ++world) {
      for (std::uint64_t epoch : kEpochs) {
        INFO("dataset " << size << ", world " << world << ", epoch " << epoch);
        const std::uint64_t W = static_cast<std::uint64_t>(world);
        const std::uint64_t each = size / W;
        auto samplers = samplersFor(size, world, {true, true, false}, epoch);
        const Indices order = samplers.front().globalOrder();
        std::multiset<std::uint64_t> read;
        for (int rank = 0; rank < world; ++rank) {
          INFO("rank " << rank);
          const Indices mine = samplers[rank].indices();
          REQUIRE(samplers[rank].numSamples() == each);
          REQUIRE(mine.size() == each);
          for (std::uint64_t k = 0; k < mine.size(); ++k) REQUIRE(mine[k] == order[rank + k * W]);
          read.insert(mine.begin(), mine.end());
        }
        REQUIRE(read.size() == each * W);
        // No sample twice, and exactly the head of the order is read: the tail is dropped.
        const std::multiset<std::uint64_t> head(order.begin(), order.begin() + static_cast<long>(each * W));
        REQUIRE(read == head);
        for (std::uint64_t i = each * W; i < size; ++i) REQUIRE(read.count(order[i]) == 0);
      }
    }
  }
}

TEST_CASE("unequal shards: an exact partition, sizes differing by at most one", "[sampler]") {
  for (std::uint64_t size : kDatasetSizes) {
    for (int world = 1; world <= kMaxWorld; ++world) {
      for (std::uint64_t epoch : kEpochs) {
        INFO("dataset " << size << ", world " << world << ", epoch " << epoch);
        const std::uint64_t W = static_cast<std::uint64_t>(world);
        auto samplers = samplersFor(size, world, {true, false, true}, epoch);
        const Indices order = samplers.front().globalOrder();
        std::multiset<std::uint64_t> read;
        std::uint64_t smallest = UINT64_MAX, largest = 0;
        for (int rank = 0; rank < world; ++rank) {
          INFO("rank " << rank);
          const Indices mine = samplers[rank].indices();
          REQUIRE(samplers[rank].numSamples() == mine.size());
          // The first N mod W ranks get one more.
          REQUIRE(mine.size() == size / W + (static_cast<std::uint64_t>(rank) < size % W ? 1 : 0));
          for (std::uint64_t k = 0; k < mine.size(); ++k) REQUIRE(mine[k] == order[rank + k * W]);
          smallest = std::min<std::uint64_t>(smallest, mine.size());
          largest = std::max<std::uint64_t>(largest, mine.size());
          read.insert(mine.begin(), mine.end());
        }
        REQUIRE(largest - smallest <= 1);
        // Every index exactly once: no padding, nothing dropped.
        REQUIRE(read.size() == size);
        REQUIRE(std::set<std::uint64_t>(read.begin(), read.end()).size() == size);
        if (size > 0) REQUIRE(*read.rbegin() == size - 1);
      }
    }
  }
}

TEST_CASE("an empty dataset gives every rank nothing", "[sampler]") {
  for (int world = 1; world <= kMaxWorld; ++world) {
    for (Mode mode :
         {Mode{true, false, false}, Mode{true, true, false}, Mode{true, false, true}, Mode{false, false, false}}) {
      INFO("world " << world << ", dropLast " << mode.dropLast << ", unequal " << mode.unequalShards);
      for (DistributedSampler& sampler : samplersFor(0, world, mode, 0)) {
        CHECK(sampler.numSamples() == 0);
        CHECK(sampler.indices().empty());
        CHECK(sampler.globalOrder().empty());
      }
    }
  }
}

TEST_CASE("without shuffling rank r reads r, r+W, r+2W, ...", "[sampler]") {
  for (std::uint64_t size : kDatasetSizes) {
    for (int world = 1; world <= kMaxWorld; ++world) {
      INFO("dataset " << size << ", world " << world);
      const std::uint64_t W = static_cast<std::uint64_t>(world);
      // The epoch and seed do not matter without shuffling.
      auto samplers = samplersFor(size, world, {false, false, false}, 5, 99);
      Indices identity(size);
      for (std::uint64_t i = 0; i < size; ++i) identity[i] = i;
      REQUIRE(samplers.front().globalOrder() == identity);
      for (int rank = 0; rank < world; ++rank) {
        Indices expected;
        for (std::uint64_t k = 0; k < samplers[rank].numSamples(); ++k) expected.push_back((rank + k * W) % size);
        REQUIRE(samplers[rank].indices() == expected);
      }
    }
  }
  // Spelled out: 10 samples on 3 ranks, 4 each, the last two padded with 0 and 1.
  auto samplers = samplersFor(10, 3, {false, false, false}, 0);
  CHECK(samplers[0].indices() == Indices{0, 3, 6, 9});
  CHECK(samplers[1].indices() == Indices{1, 4, 7, 0});
  CHECK(samplers[2].indices() == Indices{2, 5, 8, 1});
}

TEST_CASE("the order changes with the epoch and with the seed", "[sampler]") {
  for (std::uint64_t size : {std::uint64_t{10}, std::uint64_t{15}, std::uint64_t{16}, std::uint64_t{17},
                             std::uint64_t{31}, std::uint64_t{100}, std::uint64_t{1000}}) {
    INFO("dataset " << size);
    CHECK(orderOf(size, 1234, 0) != orderOf(size, 1234, 1));
    CHECK(orderOf(size, 1234, 1) != orderOf(size, 1234, 2));
    CHECK(orderOf(size, 0, 0) != orderOf(size, 1, 0));
    CHECK(orderOf(size, 42, 0) != orderOf(size, 43, 0));
    CHECK(orderOf(size, 42, 0) != orderOf(size, UINT64_MAX, 0));
    // Shuffled at all: not the identity.
    Indices identity(size);
    for (std::uint64_t i = 0; i < size; ++i) identity[i] = i;
    CHECK(orderOf(size, 1234, 0) != identity);
    // And the same again when asked again (setEpoch back to an earlier epoch).
    SamplerOptions options;
    options.datasetSize = size;
    options.seed = 1234;
    DistributedSampler sampler(options);
    const Indices first = sampler.globalOrder();
    sampler.setEpoch(1);
    CHECK(sampler.globalOrder() != first);
    sampler.setEpoch(0);
    CHECK(sampler.globalOrder() == first);
  }
  // Each rank's share moves between epochs too.
  auto epoch0 = samplersFor(100, 4, {true, false, false}, 0);
  auto epoch1 = samplersFor(100, 4, {true, false, false}, 1);
  for (int rank = 0; rank < 4; ++rank) CHECK(epoch0[rank].indices() != epoch1[rank].indices());
}

TEST_CASE("the permutation is pinned", "[sampler]") {
  // These orders were computed once by this implementation (SplitMix64 + Fisher-Yates) and
  // cross-checked by an independent re-implementation. They pin the permutation across
  // platforms, standard libraries and releases: every rank of a job, whatever it was built
  // with, must compute exactly these numbers. If this fails, resumed and mixed-build jobs
  // would read different data on different ranks.
  CHECK(orderOf(10, 42, 0) == Indices{8, 7, 9, 1, 3, 0, 2, 6, 5, 4});
  CHECK(orderOf(10, 42, 1) == Indices{7, 0, 9, 5, 6, 1, 4, 8, 2, 3});
  CHECK(orderOf(10, 43, 0) == Indices{8, 9, 0, 1, 4, 2, 7, 3, 5, 6});
}

TEST_CASE("seed 002: 800 samples on 8 ranks are 100 per rank", "[sampler]") {
  for (bool dropLast : {false, true}) {
    INFO("dropLast " << dropLast);
    auto samplers = samplersFor(800, 8, {true, dropLast, false}, 0);
    std::set<std::uint64_t> read;
    for (const DistributedSampler& sampler : samplers) {
      CHECK(sampler.numSamples() == 100);
      const Indices mine = sampler.indices();
      CHECK(mine.size() == 100);
      read.insert(mine.begin(), mine.end());
    }
    // 8 × 100 distinct samples: nothing padded, nothing dropped.
    CHECK(read.size() == 800);
  }
}

TEST_CASE("a rank outside the world or an empty world is rejected", "[sampler]") {
  requireInvalidArgument(optionsFor(10, 4, 4, {true, false, false}));
  requireInvalidArgument(optionsFor(10, 5, 4, {true, false, false}));
  requireInvalidArgument(optionsFor(10, -1, 4, {true, false, false}));
  requireInvalidArgument(optionsFor(10, 0, 0, {true, false, false}));
  requireInvalidArgument(optionsFor(10, 0, -2, {true, false, false}));
  requireInvalidArgument(optionsFor(10, 1, 1, {true, true, false}));
  requireInvalidArgument(optionsFor(0, 3, 2, {true, false, true}));
  CHECK_NOTHROW(DistributedSampler(optionsFor(10, 3, 4, {true, false, false})));
  CHECK_NOTHROW(DistributedSampler(optionsFor(10, 0, 1, {true, false, false})));
}
