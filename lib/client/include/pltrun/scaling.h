#pragma once
// Batch size and learning rate that follow the world size, as Lightning's multi-GPU guide
// and the DDP learning-rate discussions describe.

#include <cstdint>

namespace pltrun {

/// per_device × accumulation × devices × nodes: the samples behind one optimizer step
/// (a batch of 7 on 8 devices and 10 nodes is 560, as Lightning's guide counts it).
std::int64_t effectiveBatchSize(std::int64_t perDeviceBatch, std::int64_t accumulationSteps,
                                std::int64_t devicesPerNode, std::int64_t nodes);

enum class LearningRateRule {
  Linear,      ///< lr × new/base (Goyal et al.; Horovod's rule of thumb)
  SquareRoot,  ///< lr × sqrt(new/base): keeps the gradient's sample variance
};

/// The learning rate for `newBatch` samples per step, given `baseLr` tuned for `baseBatch`.
/// Throws Error(InvalidArgument) for non-positive batches or a negative rate.
double scaleLearningRate(double baseLr, std::int64_t baseBatch, std::int64_t newBatch, LearningRateRule rule);

}  // namespace pltrun
