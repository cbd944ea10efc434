#pragma once
// `pltrun status`: values in the store that no pltrun agent writes. Any client that reaches
// the store (on a shared machine, another local user) may write there; what it writes is
// shown for what it is, never as the job's state: a host name with a newline or an ESC, more
// workers running than the node has, a rank outside the node's. Each such value's key is
// named (malformed_keys, exit status 2) and the value is left out. Pure.

#include <optional>
#include <string_view>

#include "rendezvous/elastic/node_assignment.h"
#include "rendezvous/elastic/node_state.h"

namespace pltrun {

/// The longest host name, address or node name status takes (a DNS name has at most 253).
constexpr size_t kMaxNameLength = 255;
/// The highest process id Linux gives (PID_MAX_LIMIT on 64 bits).
constexpr int kMaxPid = 4 * 1024 * 1024;

/// A host name, address or node name no node has: empty, longer than kMaxNameLength, or with
/// a control character, a space or a byte that is not UTF-8.
bool impossibleName(std::string_view name);

/// A node's descriptor (rR/slot/I) no agent writes: an impossible host or address, more
/// workers than kMaxWorkersPerNode, a pid or a setting out of range.
bool impossibleDescriptor(const rdzv::NodeDescriptor& node);

/// A node's place (rR/assign/I) that does not fit its `workers` and the round's `nnodes`
/// (none while not known): a node rank or global ranks out of range.
bool impossibleAssignment(const rdzv::NodeAssignment& assignment, int workers, std::optional<int> nnodes);

/// What a node's workers do (rR/state/I) as no agent of a node of `workers` workers, whose
/// first global rank is `firstRank` (-1: not placed), says it: a state other than running,
/// failed or succeeded, more workers running than it has, a rank not its own, a bad host.
bool impossibleNodeState(const rdzv::NodeState& state, int workers, int firstRank);

}  // namespace pltrun
