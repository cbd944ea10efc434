#include "rendezvous/elastic/store_json.h"

#include <charconv>

#include "base/printable_key.h"

namespace pltrun::rdzv {

MalformedJobState notWhatPltrunWrites(const std::string& key, const std::string& text, const std::string& what) {
  return MalformedJobState("the store holds " + printableKey(text) + " at " + printableKey(key) + ", not the " + what +
                           " pltrun writes there");
}

int storedDecimal(const std::string& key, const std::string& text, long long low, long long high, const char* what) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < low || value > high) {
    throw notWhatPltrunWrites(key, text, what);
  }
  return static_cast<int>(value);
}

}  // namespace pltrun::rdzv
