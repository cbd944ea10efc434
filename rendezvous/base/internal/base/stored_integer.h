#pragma once
// The integers a store keeps as decimal text (counters: ADD): the one arithmetic every Store
// that keeps values as text shares (the store's table, EtcdStore), so they cannot disagree.

#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "base/printable_key.h"

namespace pltrun {

/// ADD's arithmetic, as torch's: the decimal text `current` holds at `key` (nullptr: a
/// missing key, 0) plus `delta`, wrapping around as int64 two's complement. Throws
/// std::invalid_argument naming the key when `current` is not an integer.
inline std::int64_t addToStoredInteger(const std::string& key, const std::string* current, std::int64_t delta) {
  std::int64_t value = 0;
  if (current) {
    auto [end, error] = std::from_chars(current->data(), current->data() + current->size(), value);
    if (error != std::errc() || end != current->data() + current->size()) {
      throw std::invalid_argument("the value of key " + printableKey(key) +
                                  " is not an integer, so it cannot be added to");
    }
  }
  // Two's-complement wrap-around, as torch's int64 arithmetic does, without UB.
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(value) + static_cast<std::uint64_t>(delta));
}

}  // namespace pltrun
