#pragma once
// Names the launcher gives itself: this machine's host name, and random ids (run ids,
// agent ids) that two launchers started at the same moment do not share.

#include <string>

namespace pltrun {

/// gethostname(), as reported in logs, failure reports and rendezvous descriptors.
std::string localHostName();

/// Eight random hex digits from the system's random source.
std::string randomHexId();

/// An elastic agent's id, unique to this process among the job's agents however many share
/// a host: "HOST:PID:RANDOM". An agent that joins again as a new node takes a new one.
std::string newAgentId(const std::string& host);

}  // namespace pltrun
