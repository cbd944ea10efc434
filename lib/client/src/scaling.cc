#include "pltrun/scaling.h"

#include <cmath>
#include <string>

#include "pltrun/error.h"

namespace pltrun {

std::int64_t effectiveBatchSize(std::int64_t perDeviceBatch, std::int64_t accumulationSteps,
                                std::int64_t devicesPerNode, std::int64_t nodes) {
  if (perDeviceBatch < 1 || accumulationSteps < 1 || devicesPerNode < 1 || nodes < 1) {
    throw Error(ErrorCode::InvalidArgument, "effective batch size: every factor must be at least 1 (got " +
                                                std::to_string(perDeviceBatch) + " x " +
                                                std::to_string(accumulationSteps) + " x " +
                                                std::to_string(devicesPerNode) + " x " + std::to_string(nodes) + ")");
  }
  std::int64_t product = 0;
  if (__builtin_mul_overflow(perDeviceBatch, accumulationSteps, &product) ||
      __builtin_mul_overflow(product, devicesPerNode, &product) || __builtin_mul_overflow(product, nodes, &product)) {
    throw Error(ErrorCode::InvalidArgument, "effective batch size overflows a 64-bit integer");
  }
  return product;
}

double scaleLearningRate(double baseLr, std::int64_t baseBatch, std::int64_t newBatch, LearningRateRule rule) {
  if (baseBatch < 1 || newBatch < 1 || !(baseLr >= 0) || !std::isfinite(baseLr)) {
    throw Error(ErrorCode::InvalidArgument,
                "learning-rate scaling needs batches of at least 1 and a finite, "
                "non-negative rate");
  }
  double ratio = static_cast<double>(newBatch) / static_cast<double>(baseBatch);
  return baseLr * (rule == LearningRateRule::Linear ? ratio : std::sqrt(ratio));
}

}  // namespace pltrun
