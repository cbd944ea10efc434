#pragma once
// Who a forming round still waits for, by name, when the job knows which nodes to expect
// (ElasticRendezvousOptions::expectedHosts). Keeping O(1) requests per agent: only the agent
// in slot 1 (which keeps the last call and reads the count anyway) reads the joiners'
// descriptors, each once, as the count grows, and publishes the names still missing at
// rR/missing whenever they change (a JSON array). Every other agent, and `pltrun status`,
// reads that one key when it reports.

#include <optional>
#include <string>
#include <vector>

#include "pltrun/store.h"
#include "rendezvous/elastic/node_assignment.h"

namespace pltrun::rdzv {

class JoinRoster {
 public:
  /// Of round `round` of the job whose keys are under `jobPrefix` (jobKeyPrefix).
  JoinRoster(Store& store, std::vector<std::string> expected, std::string jobPrefix, int round);

  bool knowsNames() const { return !expected_.empty(); }

  /// Slot 1: reads the descriptors of slots up to `joined` it has not read yet (a slot whose
  /// descriptor is not written yet is read next time) and publishes the missing names when
  /// they changed.
  void track(int joined);

  /// The names still missing: slot 1's own list once it has tracked, else the published
  /// one (slot 1 may know the names where this agent was not told them); empty when the
  /// names are unknown (slot 1 has no expectation, or has not said yet).
  std::optional<std::vector<std::string>> missing();

 private:
  Store& store_;
  std::vector<std::string> expected_;
  std::string jobPrefix_;
  int round_;
  std::vector<NodeDescriptor> arrivals_;  ///< slots 1..arrivals_.size(), read by track()
  std::optional<std::vector<std::string>> tracked_;
};

}  // namespace pltrun::rdzv
