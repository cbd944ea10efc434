#pragma once
// The hosts of a job started from one shell: --hosts h1:4,h2:4, or a hostfile in the form
// horovod, Open MPI and DeepSpeed read ("host slots=N", "host:N", "host"), narrowed by
// DeepSpeed's --include/--exclude ("worker-0@worker-1:0,2").
#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/file_reader.h"

namespace pltrun {
struct HostSlots {
  std::string host;
  int slots = 0;             ///< 0: not given (the caller uses --nproc-per-node)
  std::vector<int> devices;  ///< chosen GPU/slot indices (--include host:0,2); empty: the first `slots`
};
/// One piece of DeepSpeed's --include/--exclude text: a host, whole or some of its slots.
struct Pick {
  std::string host;
  bool whole = false;
  std::vector<int> indices;  ///< sorted, no duplicates
};
/// "h1@h2:0,2" as picks; `flag` names the flag in errors (malformed text, a bad index).
std::vector<Pick> parsePicks(const std::string& flag, const std::string& text);
/// Which of DeepSpeed's --include and --exclude was given, with its text.
struct HostSelection {
  std::string flag;  ///< "--include" or "--exclude"
  std::string text;
  bool including() const { return flag == "--include"; }
};
/// None when neither was given (blank counts as not given); throws InvalidArgument when both
/// were (DeepSpeed refuses that too).
std::optional<HostSelection> hostSelection(const std::string& include, const std::string& exclude);
/// The hosts' names for a message: "a, b, c", the first 8 then "...".
std::string hostNamesText(const std::vector<HostSlots>& hosts);
/// "--hosts" text: "h1:4,h2:4", "h1,h2" (slots 0), IPv6 in brackets "[::1]:2". Duplicate hosts rejected.
std::vector<HostSlots> parseHostList(const std::string& text);
/// A hostfile's content; `path` names it in errors (with the line number). Lines: "host",
/// "host slots=N" (also "slots = N", extra keys like max_slots=M ignored), "host:N"; '#' starts a
/// comment (whole line or trailing); blank lines skipped. A host on several lines adds up its
/// slots, a line without a count being one (Open MPI, $PBS_NODEFILE); no host at all rejected.
std::vector<HostSlots> parseHostfile(const std::string& content, const std::string& path);
/// Reads a hostfile with `readFile` and parses it; a missing/unreadable file is a one-line
/// error naming it.
std::vector<HostSlots> readHostfile(const std::string& path, const FileReader& readFile);
/// DeepSpeed's --include/--exclude: "h1@h2:0,2" = all of h1, and slots 0 and 2 of h2. Include
/// keeps only what it names (a host with indices keeps those slots: devices = indices, slots = count);
/// exclude removes whole hosts or the named slots of a host (devices = the remaining indices of
/// 0..slots-1; a host left with no slot is dropped). Both empty: unchanged. Both non-empty: error
/// (DeepSpeed rejects that too). A name not in the list, or an index >= slots, is an error. When a
/// host has slots 0 (unknown) an index list is accepted as is for include; for exclude it is an error.
std::vector<HostSlots> selectHosts(std::vector<HostSlots> hosts, const std::string& include,
                                   const std::string& exclude);
/// horovodrun's and mpirun's -np: the first `count` slots in host order (the last host kept
/// in part, the hosts after it dropped). Throws Error(InvalidArgument) when a host's slot
/// count is not given or the hosts offer fewer than `count` slots.
std::vector<HostSlots> firstSlots(std::vector<HostSlots> hosts, int count);
}  // namespace pltrun
