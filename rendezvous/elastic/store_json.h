#pragma once
// Reading the JSON values of the job's keys (elastic_rendezvous.h): whatever is in the store
// is untrusted input (any client with the secret, an `etcdctl put`, an older agent), so a
// value of the wrong shape or type is an Error(Protocol) that names what was wrong, never
// one of nlohmann's exceptions escaping into an agent.

#include <nlohmann/json.hpp>
#include <string>

#include "pltrun/error.h"

namespace pltrun::rdzv {

/// `text` as a JSON object, or Error(Protocol) naming `what` ("round end").
inline nlohmann::json parseStoreObject(const std::string& text, const char* what) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (!value.is_object()) {
    throw Error(ErrorCode::Protocol,
                std::string("rendezvous: malformed ") + what + " in the store: " + text.substr(0, 200));
  }
  return value;
}

/// The field `name` of `object` as a T: Error(Protocol) when it is missing or of another type.
template <typename T>
T storeField(const nlohmann::json& object, const char* name, const char* what) {
  auto found = object.find(name);
  if (found == object.end()) {
    throw Error(ErrorCode::Protocol, std::string("rendezvous: ") + what + " in the store lacks '" + name + "'");
  }
  try {
    return found->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(ErrorCode::Protocol, std::string("rendezvous: ") + what + " in the store has a bad '" + name + "'");
  }
}

/// As storeField, but a missing field is `fallback` (a wrong type is still an error).
template <typename T>
T storeFieldOr(const nlohmann::json& object, const char* name, const char* what, T fallback) {
  return object.contains(name) ? storeField<T>(object, name, what) : fallback;
}

}  // namespace pltrun::rdzv
