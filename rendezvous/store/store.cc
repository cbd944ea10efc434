#include "pltrun/store.h"

#include <algorithm>

#include "base/seconds_text.h"
#include "pltrun/error.h"
#include "rendezvous/store/socket_stream.h"
#include "rendezvous/store/store_errors.h"

namespace pltrun {

// Read, then compare-and-set from the value read until no other client got in between (as
// torch's clients append on a server without APPEND). compareSet answers with `expected`
// itself only when the key is missing (a match is replaced): deleted since it was read, the
// key is created from nothing, where a loop on the stale value would never end.
void Store::append(const std::string& key, const std::string& value) {
  std::string current = check({key}) ? get(key) : std::string();
  for (;;) {
    const std::string desired = current + value;
    const std::string now = compareSet(key, current, desired);
    if (now == desired) return;
    current = now == current ? std::string() : now;
  }
}

// One wait for all the keys, so that a timeout names every key missing; then each is read,
// within what is left of the timeout (a key deleted in between times out by itself).
std::vector<std::string> Store::multiGet(const std::vector<std::string>& keys, Duration timeout) {
  if (keys.empty()) return {};
  const auto deadline = detail::deadlineAfter(timeout);
  wait(keys, timeout);
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (const std::string& key : keys) {
    const auto left = std::chrono::ceil<Duration>(deadline - detail::Clock::now());
    values.push_back(get(key, std::max(left, Duration(1))));
  }
  return values;
}

void Store::multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  detail::requireOneValuePerKey(keys, values);
  for (std::size_t index = 0; index < keys.size(); ++index) set(keys[index], values[index]);
}

// Every store can wait for one key with a timeout and check the others, so the default is
// that, a slice at a time: on the TCP store as many requests per slice as the rendezvous
// made before waitAny existed. A zero timeout checks each key once.
std::size_t Store::waitAny(const std::vector<std::string>& keys, Duration timeout, Duration slice,
                           const std::function<void()>& between) {
  if (keys.empty()) throw Error(ErrorCode::InvalidArgument, "waitAny needs at least one key");
  const auto deadline = detail::deadlineAfter(timeout);
  for (;;) {
    if (timeout.count() <= 0) {
      if (check({keys[0]})) return 0;
    } else {
      try {
        const Duration left = std::chrono::ceil<Duration>(deadline - detail::Clock::now());
        wait({keys[0]}, std::max(std::min(slice, left), Duration(1)));
        return 0;
      } catch (const Error& error) {
        if (error.code() != ErrorCode::Timeout) throw;
      }
    }
    for (std::size_t index = 1; index < keys.size(); ++index) {
      if (check({keys[index]})) return index;
    }
    if (detail::Clock::now() >= deadline) {
      throw Error(ErrorCode::Timeout,
                  "timed out after " + secondsText(timeout) + " s waiting for any of " + detail::describeKeys(keys));
    }
    if (between) between();
  }
}

}  // namespace pltrun
