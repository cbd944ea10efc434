// Batch size and learning rate that follow the world size: the seeds' worked examples and
// the inputs that are rejected.

#include "pltrun/scaling.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "pltrun/error.h"

using pltrun::effectiveBatchSize;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::LearningRateRule;
using pltrun::scaleLearningRate;

namespace {

template <typename Call>
void requireInvalidArgument(Call call) {
  try {
    call();
    FAIL("no error was thrown");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
  }
}

}  // namespace

TEST_CASE("effective batch size: the seeds' examples", "[scaling]") {
  // Seed 000: a batch of 7 on 8 devices is 56; on 10 such nodes, 560.
  CHECK(effectiveBatchSize(7, 1, 8, 1) == 56);
  CHECK(effectiveBatchSize(7, 1, 8, 10) == 560);
  // Seed 002: batch 512, no accumulation, 2 GPUs on 1 node: 1024 samples per step.
  CHECK(effectiveBatchSize(512, 1, 2, 1) == 1024);
}

TEST_CASE("effective batch size multiplies every factor", "[scaling]") {
  CHECK(effectiveBatchSize(1, 1, 1, 1) == 1);
  CHECK(effectiveBatchSize(2, 3, 5, 7) == 210);
  CHECK(effectiveBatchSize(7, 4, 1, 1) == 28);  // accumulation counts
  CHECK(effectiveBatchSize(7, 1, 1, 3) == 21);  // nodes count
  CHECK(effectiveBatchSize(32, 8, 8, 128) == 262144);
}

TEST_CASE("effective batch size rejects factors below one", "[scaling]") {
  for (std::int64_t bad : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{-512}}) {
    INFO("bad factor " << bad);
    requireInvalidArgument([&] { effectiveBatchSize(bad, 1, 8, 1); });
    requireInvalidArgument([&] { effectiveBatchSize(7, bad, 8, 1); });
    requireInvalidArgument([&] { effectiveBatchSize(7, 1, bad, 1); });
    requireInvalidArgument([&] { effectiveBatchSize(7, 1, 8, bad); });
  }
  // Two negatives must not multiply into a valid-looking positive.
  requireInvalidArgument([] { effectiveBatchSize(-7, -1, 8, 1); });
}

TEST_CASE("learning rate: the seeds' examples", "[scaling]") {
  // Seed 002: tuned for 512 samples, run with 1024: square-root rule multiplies by sqrt(2).
  for (double lr : {0.1, 0.001, 3e-4, 1.0}) {
    INFO("lr " << lr);
    CHECK(scaleLearningRate(lr, 512, 1024, LearningRateRule::SquareRoot) == Approx(lr * std::sqrt(2.0)));
  }
  // Seed 003 (Clara/Horovod): LR 0.0001 on 1 GPU becomes 0.0002 on 2 GPUs (linear rule).
  const std::int64_t oneGpu = effectiveBatchSize(16, 1, 1, 1), twoGpus = effectiveBatchSize(16, 1, 2, 1);
  CHECK(scaleLearningRate(0.0001, oneGpu, twoGpus, LearningRateRule::Linear) == Approx(0.0002));
}

TEST_CASE("learning rate: linear and square-root rules", "[scaling]") {
  CHECK(scaleLearningRate(0.1, 256, 256, LearningRateRule::Linear) == Approx(0.1));
  CHECK(scaleLearningRate(0.1, 256, 256, LearningRateRule::SquareRoot) == Approx(0.1));
  CHECK(scaleLearningRate(0.1, 256, 8192, LearningRateRule::Linear) == Approx(3.2));  // Goyal et al.: ×32
  CHECK(scaleLearningRate(0.1, 256, 1024, LearningRateRule::SquareRoot) == Approx(0.2));
  CHECK(scaleLearningRate(0.4, 1024, 256, LearningRateRule::Linear) == Approx(0.1));  // shrinking too
  CHECK(scaleLearningRate(0.4, 1024, 256, LearningRateRule::SquareRoot) == Approx(0.2));
  CHECK(scaleLearningRate(0.0, 1, 1024, LearningRateRule::Linear) == 0.0);  // zero stays zero
  CHECK(scaleLearningRate(1.0, 3, 7, LearningRateRule::Linear) == Approx(7.0 / 3.0));
}

TEST_CASE("learning rate rejects bad batches and rates", "[scaling]") {
  for (auto rule : {LearningRateRule::Linear, LearningRateRule::SquareRoot}) {
    INFO("rule " << static_cast<int>(rule));
    requireInvalidArgument([&] { scaleLearningRate(0.1, 0, 512, rule); });
    requireInvalidArgument([&] { scaleLearningRate(0.1, -512, 512, rule); });
    requireInvalidArgument([&] { scaleLearningRate(0.1, 512, 0, rule); });
    requireInvalidArgument([&] { scaleLearningRate(0.1, 512, -1024, rule); });
    requireInvalidArgument([&] { scaleLearningRate(0.1, -512, -1024, rule); });
    requireInvalidArgument([&] { scaleLearningRate(-0.1, 512, 1024, rule); });
    requireInvalidArgument([&] { scaleLearningRate(std::numeric_limits<double>::quiet_NaN(), 512, 1024, rule); });
    requireInvalidArgument([&] { scaleLearningRate(std::numeric_limits<double>::infinity(), 512, 1024, rule); });
    requireInvalidArgument([&] { scaleLearningRate(-std::numeric_limits<double>::infinity(), 512, 1024, rule); });
  }
}
