#include "rendezvous/elastic/round_end.h"

#include <array>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/printable_key.h"
#include "base/terminal_text.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/store_json.h"

namespace pltrun::rdzv {

namespace {

constexpr std::array<std::pair<RoundEnd::Reason, const char*>, 7> kReasonNames{{
    {RoundEnd::Reason::Succeeded, "succeeded"},
    {RoundEnd::Reason::WorkerFailed, "worker_failed"},
    {RoundEnd::Reason::NodeLost, "node_lost"},
    {RoundEnd::Reason::NodeJoined, "node_joined"},
    {RoundEnd::Reason::Stopped, "stopped"},
    {RoundEnd::Reason::RendezvousFailed, "rendezvous_failed"},
    {RoundEnd::Reason::TimedOut, "timed_out"},
}};

}  // namespace

const char* RoundEnd::reasonName(Reason reason) {
  for (const auto& [value, name] : kReasonNames) {
    if (value == reason) return name;
  }
  return "unknown";
}

std::string RoundEnd::toJson() const {
  nlohmann::json value = {{"reason", reasonName(reason)}, {"host", host},  {"message", message}, {"status", status},
                          {"failures", failures},         {"final", final}};
  if (!cause.empty()) value["cause"] = cause;
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

RoundEnd RoundEnd::fromJson(const std::string& text) {
  const char* what = "round end";
  const nlohmann::json value = parseStoreObject(text, what);
  const std::string name = storeField<std::string>(value, "reason", what);
  RoundEnd end;
  bool known = false;
  for (const auto& [reason, reasonText] : kReasonNames) {
    if (name == reasonText) {
      end.reason = reason;
      known = true;
    }
  }
  if (!known) throw MalformedJobState("unknown round end reason " + printableKey(name));
  end.host = storeFieldOr<std::string>(value, "host", what, "");
  end.message = storeFieldOr<std::string>(value, "message", what, "");
  end.status = storeFieldOr<int>(value, "status", what, 0);
  end.failures = storeFieldOr<int>(value, "failures", what, 0);
  end.final = storeFieldOr<bool>(value, "final", what, false);
  // The cause only names a metric's label (read by restartCauseOfRoundEnd, which accepts the
  // known names only): one of another type is not said, rather than a malformed round end.
  const auto cause = value.find("cause");
  if (cause != value.end() && cause->is_string()) end.cause = cause->get<std::string>();
  if (end.status < 0 || end.status > 255 || end.failures < 0) {
    throw MalformedJobState("round end in the store with a status or failure count out of range");
  }
  return end;
}

RoundEnd RoundEnd::fromStoreValue(const std::string& key, const std::string& text) {
  try {
    return fromJson(text);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::Protocol) throw;
    RoundEnd malformed;
    malformed.reason = Reason::RendezvousFailed;
    malformed.message = "the store holds a malformed value at " + printableKey(key) + " (" + error.what() + ")";
    return malformed;
  }
}

std::string RoundEnd::describe() const {
  // Both come from the store: printed on a terminal within one line, they must neither drive
  // it nor start a line of their own.
  const std::string who = terminalSafeLine(host);
  const std::string why = terminalSafeLine(message);
  switch (reason) {
    case Reason::Succeeded:
      return "every node's workers succeeded";
    case Reason::WorkerFailed:
      return "a worker failed on " + who + ": " + why;
    case Reason::NodeLost:
      return "node " + who + " lost (" + why + ")";
    case Reason::NodeJoined:
      return "node " + who + " joined";
    case Reason::Stopped:
      return "node " + who + " was stopped (" + why + ")";
    case Reason::RendezvousFailed:
      return "the round could not be formed: " + why;
    case Reason::TimedOut:
      return "the rendezvous timed out: " + why;
  }
  return why;
}

}  // namespace pltrun::rdzv
