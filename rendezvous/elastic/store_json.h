#pragma once
// Reading the values of the job's keys (store_layout.h): whatever is in the store is
// untrusted input (any client with the secret, an `etcdctl put`, an older agent, another
// job on the same run id), so a value of the wrong shape or type is a MalformedJobState that
// names what was wrong, never one of nlohmann's exceptions escaping into an agent.

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

#include "pltrun/error.h"

namespace pltrun::rdzv {

/// A value in the job's keys that pltrun does not write there. Its own type, so that an agent
/// tells "not pltrun's state" from a store that failed (both are Error(Protocol)).
class MalformedJobState : public Error {
 public:
  explicit MalformedJobState(const std::string& what) : Error(ErrorCode::Protocol, "rendezvous: " + what) {}
};

/// "the store holds TEXT at KEY, not the WHAT pltrun writes there", both printable.
MalformedJobState notWhatPltrunWrites(const std::string& key, const std::string& text, const std::string& what);

/// The decimal integer in [low, high] pltrun wrote at `key`; else notWhatPltrunWrites(what).
int storedDecimal(const std::string& key, const std::string& text, long long low, long long high, const char* what);

/// `text` as a JSON object, or Error(Protocol) naming `what` ("round end").
inline nlohmann::json parseStoreObject(const std::string& text, const char* what) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (!value.is_object()) {
    throw MalformedJobState(std::string("malformed ") + what + " in the store: " + text.substr(0, 200));
  }
  return value;
}

/// The field `name` of `object` as a T: Error(Protocol) when it is missing or of another type.
template <typename T>
T storeField(const nlohmann::json& object, const char* name, const char* what) {
  auto found = object.find(name);
  if (found == object.end()) {
    throw MalformedJobState(std::string(what) + " in the store lacks '" + name + "'");
  }
  const auto bad = [&] { return MalformedJobState(std::string(what) + " in the store has a bad '" + name + "'"); };
  if constexpr (std::is_same_v<T, int>) {
    // nlohmann converts a float (3.8e22) or a wider integer to int with a plain cast: undefined
    // or wrapped. Only an integer that fits is an int.
    if (!found->is_number_integer()) throw bad();
    if (found->is_number_unsigned()) {
      const auto value = found->get<unsigned long long>();
      if (value > static_cast<unsigned long long>(std::numeric_limits<int>::max())) throw bad();
      return static_cast<int>(value);
    }
    const auto value = found->get<long long>();
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) throw bad();
    return static_cast<int>(value);
  } else {
    try {
      return found->get<T>();
    } catch (const nlohmann::json::exception&) {
      throw bad();
    }
  }
}

/// As storeField, but a missing field is `fallback` (a wrong type is still an error).
template <typename T>
T storeFieldOr(const nlohmann::json& object, const char* name, const char* what, T fallback) {
  return object.contains(name) ? storeField<T>(object, name, what) : fallback;
}

}  // namespace pltrun::rdzv
