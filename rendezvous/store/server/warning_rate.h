#pragma once
// One kind of warning at most once per interval, however often its cause repeats (a flood of
// connections would otherwise write thousands of lines a second): the first is logged, the
// rest counted, and the next one logged says how many were left out.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace pltrun::rdzv {

class WarningRate {
 public:
  explicit WarningRate(std::chrono::steady_clock::duration interval) : interval_(interval) {}

  /// None: leave this one out. Otherwise log it, with the count of those left out before.
  std::optional<std::uint64_t> admit() {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (logged_ && now - last_ < interval_) {
      ++leftOut_;
      return std::nullopt;
    }
    logged_ = true;
    last_ = now;
    const std::uint64_t leftOut = leftOut_;
    leftOut_ = 0;
    return leftOut;
  }

 private:
  std::mutex mutex_;
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point last_{};
  bool logged_ = false;
  std::uint64_t leftOut_ = 0;
};

/// " (and 12 more like it)" for a count left out, else nothing.
inline std::string moreLikeIt(std::uint64_t leftOut) {
  return leftOut == 0 ? "" : " (and " + std::to_string(leftOut) + " more like it since the last such line)";
}

}  // namespace pltrun::rdzv
