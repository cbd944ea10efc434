#include "rendezvous/elastic/round_end.h"

#include <array>
#include <nlohmann/json.hpp>
#include <utility>

#include "pltrun/error.h"

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
  return value.dump();
}

RoundEnd RoundEnd::fromJson(const std::string& text) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (!value.is_object() || !value.contains("reason") || !value["reason"].is_string()) {
    throw Error(ErrorCode::Protocol, "rendezvous: malformed round end in the store: " + text.substr(0, 200));
  }
  RoundEnd end;
  const std::string name = value["reason"].get<std::string>();
  bool known = false;
  for (const auto& [reason, reasonText] : kReasonNames) {
    if (name == reasonText) {
      end.reason = reason;
      known = true;
    }
  }
  if (!known) throw Error(ErrorCode::Protocol, "rendezvous: unknown round end reason '" + name + "'");
  end.host = value.value("host", "");
  end.message = value.value("message", "");
  end.status = value.value("status", 0);
  end.failures = value.value("failures", 0);
  end.final = value.value("final", false);
  return end;
}

std::string RoundEnd::describe() const {
  switch (reason) {
    case Reason::Succeeded:
      return "every node's workers succeeded";
    case Reason::WorkerFailed:
      return "a worker failed on " + host + ": " + message;
    case Reason::NodeLost:
      return "node " + host + " lost (" + message + ")";
    case Reason::NodeJoined:
      return "node " + host + " joined";
    case Reason::Stopped:
      return "node " + host + " was stopped (" + message + ")";
    case Reason::RendezvousFailed:
      return "the round could not be formed: " + message;
    case Reason::TimedOut:
      return "the rendezvous timed out: " + message;
  }
  return message;
}

}  // namespace pltrun::rdzv
