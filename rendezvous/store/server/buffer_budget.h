#pragma once
// The bytes all of a server's connections together may hold in their buffers: requests
// still arriving (or read ahead of a parked one) and replies not yet written. Each
// connection is bounded on its own (256 MiB a request, 16 MiB of replies and one more), but
// thousands of connections each filling their own bounds would take the server's memory
// past any limit; this one bounds their sum (the server gives it --max-store-bytes, so
// buffers and the table each hold at most that much). No I/O, no locking: the server's one
// event-loop thread calls it.

#include <cstdint>

namespace pltrun::rdzv {

class BufferBudget {
 public:
  explicit BufferBudget(std::uint64_t limit) : limit_(limit) {}
  /// Takes `bytes` more; false (nothing taken) when they would pass the limit.
  bool take(std::uint64_t bytes) {
    if (bytes > limit_ - held_) return false;
    held_ += bytes;
    return true;
  }
  /// Gives back bytes taken earlier.
  void give(std::uint64_t bytes) { held_ -= bytes < held_ ? bytes : held_; }
  std::uint64_t held() const { return held_; }
  std::uint64_t limit() const { return limit_; }

 private:
  std::uint64_t limit_;
  std::uint64_t held_ = 0;
};

}  // namespace pltrun::rdzv
