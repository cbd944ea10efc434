#include "launcher/command_line/slurm.h"

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

// The most host names a list may expand to: far above any cluster's node count, far below
// what would exhaust memory (n[0-99999][0-99999] is 1e10 names).
constexpr size_t kMaxHostNames = 100000;

[[noreturn]] void tooMany(const std::string& whole) {
  malformed(whole, "it expands to more than " + std::to_string(kMaxHostNames) + " host names");
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
    if (static_cast<unsigned long long>(*high - *low) >= kMaxHostNames - values.size()) tooMany(whole);
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
    if (prefixes.size() * values.size() > kMaxHostNames - out.size()) tooMany(whole);
    std::vector<std::string> next;
    for (const std::string& prefix : prefixes) {
      for (const std::string& value : values) next.push_back(prefix + value);
    }
    prefixes = std::move(next);
    at = close + 1;
  }
  if (prefixes.size() > kMaxHostNames - out.size()) tooMany(whole);
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
  std::string line = "Slurm job " + jobId + " (" + (inStep() ? "step " + *stepId : "batch script") + "): ";
  if (nnodes == 1) return line + "1 node (" + hosts.front() + "), run id " + jobId;
  return line + std::to_string(nnodes) + " nodes (first " + hosts.front() + "), this is node " +
         std::to_string(nodeRank) + "; rendezvous at " + hosts.front() + ":" + std::to_string(port) + ", run id " +
         jobId;
}

namespace {

// Slurm's numbers for the steps that are not srun's: the batch script, the extern step,
// salloc's interactive step (0xfffffffa and up). A task of one of them is not in a step.
bool isSrunStep(const std::string& stepId) {
  auto number = parseInteger(trimSpaces(stepId));
  return number && *number >= 0 && *number < 0xfffffffaLL;
}

// The step's nodes, tasks and this task's place in it.
void readStep(const Environment& env, SlurmJob& job) {
  auto nnodes = firstOf(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"});
  auto nodeList = firstOf(env, {"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"});
  auto nodeId = firstOf(env, {"SLURM_NODEID"});
  if (!nnodes || !nodeList || !nodeId) {
    throw Error(ErrorCode::InvalidArgument, "Slurm step " + *job.stepId +
                                                " without SLURM_STEP_NUM_NODES, SLURM_STEP_NODELIST or SLURM_NODEID: "
                                                "pass --nnodes and --rdzv-endpoint yourself");
  }
  job.nnodes = positiveNumber("SLURM_STEP_NUM_NODES", *nnodes, 1);
  job.nodeRank = positiveNumber("SLURM_NODEID", *nodeId, 0);
  job.hosts = expandHostlist(*nodeList);
  auto tasks = firstOf(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  job.tasks = tasks ? positiveNumber("SLURM_STEP_NUM_TASKS", *tasks, 1) : job.nnodes;
  auto localId = firstOf(env, {"SLURM_LOCALID"});
  job.localTask = localId ? positiveNumber("SLURM_LOCALID", *localId, 0) : 0;
  if (static_cast<int>(job.hosts.size()) != job.nnodes) {
    throw Error(ErrorCode::InvalidArgument, "Slurm says " + std::to_string(job.nnodes) + " nodes but its node list '" +
                                                *nodeList + "' names " + std::to_string(job.hosts.size()));
  }
  if (job.nodeRank >= job.nnodes) {
    throw Error(ErrorCode::InvalidArgument, "SLURM_NODEID=" + std::to_string(job.nodeRank) + " but the step has only " +
                                                std::to_string(job.nnodes) + " nodes");
  }
}

// The allocation, seen from its batch script or salloc's shell.
void readAllocation(const Environment& env, SlurmJob& job) {
  auto nnodes = firstOf(env, {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"});
  auto nodeList = firstOf(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  job.hosts = nodeList ? expandHostlist(*nodeList) : std::vector<std::string>{"this node"};
  job.nnodes = nnodes ? positiveNumber("SLURM_JOB_NUM_NODES", *nnodes, 1) : static_cast<int>(job.hosts.size());
}

}  // namespace

std::optional<SlurmJob> detectSlurm(const Environment& env) {
  auto jobId = firstOf(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
  if (!jobId) return std::nullopt;
  SlurmJob job;
  job.jobId = *jobId;
  auto stepId = firstOf(env, {"SLURM_STEP_ID", "SLURM_STEPID"});
  if (stepId && isSrunStep(*stepId)) job.stepId = std::string(trimSpaces(*stepId));
  if (job.inStep()) {
    readStep(env, job);
  } else {
    readAllocation(env, job);
  }
  job.port = slurmRendezvousPort(job.jobId);
  return job;
}

std::string slurmMisuse(const SlurmJob& job) {
  if (!job.inStep()) {
    if (job.nnodes == 1) return "";
    return "Slurm job " + job.jobId + " has " + std::to_string(job.nnodes) +
           " nodes, but pltrun was started by its batch script, not by srun, so no pltrun runs on the other "
           "nodes: start one per node with `srun --ntasks-per-node=1 pltrun ...` (or pass --nnodes 1 to use this "
           "node alone)";
  }
  if (job.tasks == job.nnodes && job.localTask == 0) return "";
  std::string perNode = job.tasks % job.nnodes == 0 ? std::to_string(job.tasks / job.nnodes) + " per node" : "uneven";
  return "srun started " + std::to_string(job.tasks) + " tasks on " + std::to_string(job.nnodes) + " node" +
         (job.nnodes == 1 ? "" : "s") + " (" + perNode +
         "), but pltrun starts the workers itself and must be one task per node: use `srun --ntasks-per-node=1 "
         "pltrun --nproc-per-node N ...`";
}

}  // namespace pltrun
