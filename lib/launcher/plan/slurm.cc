#include "launcher/plan/slurm.h"

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

[[noreturn]] void malformed(const std::string& text, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "Slurm node list '" + text + "': " + why);
}

// Splits at commas outside brackets: "a[1,2],b" -> "a[1,2]", "b".
std::vector<std::string> splitTopLevel(const std::string& text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) malformed(text, "']' without '['");
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0) malformed(text, "'[' without ']'");
  parts.push_back(current);
  return parts;
}

std::string padded(long long number, size_t width) {
  std::string digits = std::to_string(number);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// "01-04,07" -> 01 02 03 04 07 (widths as written).
std::vector<std::string> expandGroup(const std::string& whole, const std::string& group) {
  std::vector<std::string> values;
  for (std::string_view item : splitText(group, ',')) {
    auto bounds = splitText(item, '-');
    if (item.empty() || bounds.size() > 2) malformed(whole, "bad range '" + std::string(item) + "'");
    auto low = parseInteger(bounds[0]);
    auto high = bounds.size() == 2 ? parseInteger(bounds[1]) : low;
    if (!low || !high || *low < 0) malformed(whole, "bad range '" + std::string(item) + "'");
    if (*high < *low) malformed(whole, "range '" + std::string(item) + "' runs backwards");
    if (*high - *low > 100000) malformed(whole, "range '" + std::string(item) + "' is too long");
    for (long long number = *low; number <= *high; ++number) values.push_back(padded(number, bounds[0].size()));
  }
  return values;
}

// One name with bracket groups: the product of its groups, left to right.
void expandName(const std::string& whole, const std::string& name, std::vector<std::string>& out) {
  std::vector<std::string> prefixes{""};
  size_t at = 0;
  while (at < name.size()) {
    size_t open = name.find('[', at);
    std::string literal = name.substr(at, open == std::string::npos ? std::string::npos : open - at);
    for (std::string& prefix : prefixes) prefix += literal;
    if (open == std::string::npos) break;
    size_t close = name.find(']', open);
    std::vector<std::string> values = expandGroup(whole, name.substr(open + 1, close - open - 1));
    std::vector<std::string> next;
    for (const std::string& prefix : prefixes) {
      for (const std::string& value : values) next.push_back(prefix + value);
    }
    prefixes = std::move(next);
    at = close + 1;
  }
  for (std::string& host : prefixes) {
    if (host.empty()) malformed(whole, "empty host name");
    out.push_back(std::move(host));
  }
}

std::optional<std::string> firstOf(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto found = env.find(name);
    if (found != env.end() && !found->second.empty()) return found->second;
  }
  return std::nullopt;
}

int positiveNumber(const std::string& name, const std::string& text, long long low) {
  auto number = parseInteger(trimSpaces(text));
  if (!number || *number < low || *number > 100000) {
    throw Error(ErrorCode::InvalidArgument, name + "='" + text + "' is not a node count or index Slurm would set");
  }
  return static_cast<int>(*number);
}

}  // namespace

std::vector<std::string> expandHostlist(const std::string& text) {
  std::string trimmed(trimSpaces(text));
  if (trimmed.empty()) malformed(text, "empty");
  std::vector<std::string> hosts;
  for (const std::string& name : splitTopLevel(trimmed)) expandName(trimmed, name, hosts);
  return hosts;
}

int slurmRendezvousPort(const std::string& jobId) {
  auto number = parseInteger(jobId);
  if (!number || *number < 0) return 29400;
  return static_cast<int>(10000 + *number % 50000);
}

std::string SlurmJob::describe() const {
  return "Slurm job " + jobId + ": " + std::to_string(nnodes) + " nodes (first " + hosts.front() + "), this is node " +
         std::to_string(nodeRank) + "; rendezvous at " + hosts.front() + ":" + std::to_string(port) + ", run id " +
         jobId;
}

std::optional<SlurmJob> detectSlurm(const Environment& env) {
  auto jobId = firstOf(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
  auto nnodes = firstOf(env, {"SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
  auto nodeId = firstOf(env, {"SLURM_NODEID"});
  auto nodeList = firstOf(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  if (!jobId || !nnodes || !nodeId || !nodeList) return std::nullopt;
  SlurmJob job;
  job.jobId = *jobId;
  job.nnodes = positiveNumber("SLURM_NNODES", *nnodes, 1);
  job.nodeRank = positiveNumber("SLURM_NODEID", *nodeId, 0);
  job.hosts = expandHostlist(*nodeList);
  if (static_cast<int>(job.hosts.size()) != job.nnodes) {
    throw Error(ErrorCode::InvalidArgument, "Slurm says " + std::to_string(job.nnodes) + " nodes but its node list '" +
                                                *nodeList + "' names " + std::to_string(job.hosts.size()));
  }
  if (job.nodeRank >= job.nnodes) {
    throw Error(ErrorCode::InvalidArgument, "SLURM_NODEID=" + std::to_string(job.nodeRank) + " but the job has only " +
                                                std::to_string(job.nnodes) + " nodes");
  }
  job.port = slurmRendezvousPort(job.jobId);
  return job;
}

}  // namespace pltrun
