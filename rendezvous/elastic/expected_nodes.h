#pragma once
// Which of the nodes a job expects have not joined yet, by name. The expected names come from
// where the job was described (Slurm's node list, the driver's --hosts, or --rdzv-conf
// expected_hosts=...), and they need not be spelled as the nodes call themselves: a name
// matches a node by the name it was given (--rdzv-conf node_name=), its host name, its
// short host name (gpu-07 for gpu-07.cluster.local, either way round, without case) or its
// address. Pure.

#include <optional>
#include <string>
#include <vector>

#include "rendezvous/elastic/node_assignment.h"

namespace pltrun::rdzv {

/// The entries of `expected` that no node of `joined` accounts for, in `expected`'s order.
/// Each joined node accounts for one entry at most (a name listed twice needs two nodes);
/// exact matches are made before short-name ones, so gpu-07 and gpu-07.b never steal each
/// other's node.
std::vector<std::string> missingNodes(const std::vector<std::string>& expected,
                                      const std::vector<NodeDescriptor>& joined);

/// Names for one log line: "a, b, c", at most `shown` of them, then "and N more".
std::string nodeNamesText(const std::vector<std::string>& names, size_t shown = 8);

/// The names as rR/missing holds them: a JSON array of strings.
std::string nodeNamesJson(const std::vector<std::string>& names);
/// rR/missing read back; none when `text` is not a JSON array (its non-strings are skipped).
std::optional<std::vector<std::string>> nodeNamesFromJson(const std::string& text);

}  // namespace pltrun::rdzv
