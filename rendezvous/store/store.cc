#include "pltrun/store.h"

#include <algorithm>

#include "base/seconds_text.h"
#include "pltrun/error.h"
#include "rendezvous/store/store_errors.h"

namespace pltrun {

// Every store can wait for one key with a timeout and check the others, so the default is
// that, a slice at a time: on the TCP store as many requests per slice as the rendezvous
// made before waitAny existed. A zero timeout checks each key once.
std::size_t Store::waitAny(const std::vector<std::string>& keys, Duration timeout, Duration slice,
                           const std::function<void()>& between) {
  if (keys.empty()) throw Error(ErrorCode::InvalidArgument, "waitAny needs at least one key");
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (timeout.count() <= 0) {
      if (check({keys[0]})) return 0;
    } else {
      try {
        const Duration left = std::chrono::ceil<Duration>(deadline - Clock::now());
        wait({keys[0]}, std::max(std::min(slice, left), Duration(1)));
        return 0;
      } catch (const Error& error) {
        if (error.code() != ErrorCode::Timeout) throw;
      }
    }
    for (std::size_t index = 1; index < keys.size(); ++index) {
      if (check({keys[index]})) return index;
    }
    if (Clock::now() >= deadline) {
      throw Error(ErrorCode::Timeout,
                  "timed out after " + secondsText(timeout) + " s waiting for any of " + detail::describeKeys(keys));
    }
    if (between) between();
  }
}

}  // namespace pltrun
