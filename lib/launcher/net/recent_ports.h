#pragma once
// The ports recent attempts' workers' stores were given, which the next attempt must not
// reuse (attempt_store.h): a straggler of attempt N that reconnects to its MASTER_PORT must
// reach nothing. A straggler lives seconds (its group is killed before the restart, and an
// elastic node that lost the store fences its workers), so what must be remembered is
// recent, not everything: every port of the last kAlwaysKept attempts, and any port given
// within kKeptFor while the port range has room. Bounded, so a job can restart any number
// of times in a narrow port range. Pure (time is passed in), for the unit tests.

#include <chrono>
#include <cstddef>
#include <deque>

namespace pltrun {

class RecentPorts {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kAlwaysKept = 16;
  static constexpr Clock::duration kKeptFor = std::chrono::minutes(5);

  /// Whether `port` was given recently enough to be refused now.
  bool contains(int port, Clock::time_point now) {
    forgetExpired(now);
    for (const Given& given : given_) {
      if (given.port == port) return true;
    }
    return false;
  }

  void add(int port, Clock::time_point now) {
    forgetExpired(now);
    given_.push_back(Given{port, now});
  }

  /// The range is crowded (no port found in many tries): forget what is older than the
  /// last kAlwaysKept attempts, whatever its age. False when there was nothing to forget.
  bool makeRoom() {
    if (given_.size() <= kAlwaysKept) return false;
    given_.erase(given_.begin(), given_.end() - kAlwaysKept);
    return true;
  }

  size_t size() const { return given_.size(); }

 private:
  struct Given {
    int port;
    Clock::time_point at;
  };

  void forgetExpired(Clock::time_point now) {
    while (given_.size() > kAlwaysKept && now - given_.front().at > kKeptFor) given_.pop_front();
  }

  std::deque<Given> given_;  ///< oldest first
};

}  // namespace pltrun
