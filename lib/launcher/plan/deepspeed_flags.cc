#include "launcher/plan/deepspeed_flags.h"

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr long long kMostGpus = 1024;

int countFlag(const std::string& flag, const std::string& value) {
  return static_cast<int>(parseIntegerFlag(flag, value, 1, kMostGpus, "expected a positive whole number"));
}

// DeepSpeed's include/exclude on one node name the GPUs of "localhost", the one host its
// launcher knows without a hostfile.
DeviceSelection localGpus(const std::string& flag, const std::string& text) {
  std::vector<int> indices;
  bool whole = false;
  for (const Pick& pick : parsePicks(flag, text)) {
    if (pick.host != "localhost") {
      throwInvalidFlag(flag, text,
                       "without --hosts/--hostfile only this node's GPUs can be named, as localhost:0,1; to run on '" +
                           pick.host + "' give -H/--hostfile");
    }
    whole = pick.whole;
    indices = pick.indices;
  }
  const bool including = flag == "--include";
  if (!including && whole) throwInvalidFlag(flag, text, "excludes every GPU of this node; nothing would run");
  if (including && whole) return parseDeviceSelection("-1");
  if (!including) return allDevicesBut(indices, flag, text);
  DeviceSelection selection = listedDevices(indices);
  selection.flag = flag;
  selection.spelled = text;
  return selection;
}

void requireOneWorkerCount(const RawFlags& raw, const std::string& chosenBy) {
  if (!raw.nprocPerNode.empty() || !raw.devices.empty() || !raw.totalProcesses.empty()) {
    throw Error(ErrorCode::InvalidArgument, chosenBy +
                                                " chooses this node's GPUs, and so does --nproc-per-node, --devices "
                                                "or -np; give one of them");
  }
}

}  // namespace

void applyDeepSpeedOnOneNode(const RawFlags& raw, LaunchConfig& config) {
  if (!raw.numNodes.empty() && countFlag("--num_nodes", raw.numNodes) != 1) {
    throwInvalidFlag("--num_nodes", raw.numNodes,
                     "without -H/--hostfile the job has this node only (DeepSpeed's rule too); give a hostfile");
  }
  const bool including = !trimSpaces(raw.include).empty();
  if (including && !trimSpaces(raw.exclude).empty()) {
    throw Error(ErrorCode::InvalidArgument, "--include and --exclude cannot be used together; use one of them");
  }
  if (!raw.numGpus.empty()) {
    if (including || !raw.exclude.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "--num_gpus and --include/--exclude both choose this node's GPUs; give one of them");
    }
    requireOneWorkerCount(raw, "--num_gpus");
    // DeepSpeed's: GPUs 0..N-1 (CUDA_VISIBLE_DEVICES=0,...,N-1), refused where fewer are visible.
    DeviceSelection first = parseDeviceSelection(std::to_string(countFlag("--num_gpus", raw.numGpus)));
    first.flag = "--num_gpus";
    first.spelled = raw.numGpus;
    config.devices = first;
    return;
  }
  if (!including && trimSpaces(raw.exclude).empty()) return;
  requireOneWorkerCount(raw, including ? "--include" : "--exclude");
  config.devices = localGpus(including ? "--include" : "--exclude", including ? raw.include : raw.exclude);
}

std::vector<HostSlots> applyDeepSpeedToHosts(const RawFlags& raw, std::vector<HostSlots> hosts) {
  if (!raw.numNodes.empty()) {
    const int wanted = countFlag("--num_nodes", raw.numNodes);
    if (wanted > static_cast<int>(hosts.size())) {
      throwInvalidFlag("--num_nodes", raw.numNodes,
                       "the host list has " + std::to_string(hosts.size()) + " hosts; ask for at most that many");
    }
    hosts.resize(static_cast<size_t>(wanted));
  }
  if (raw.numGpus.empty()) return hosts;
  const int most = countFlag("--num_gpus", raw.numGpus);
  for (HostSlots& host : hosts) {
    // DeepSpeed: "will use [0:N) GPU ids on each node"; a host with fewer slots keeps its own.
    if (host.slots == 0 || host.slots > most) host.slots = most;
    if (host.devices.size() > static_cast<size_t>(most)) host.devices.resize(static_cast<size_t>(most));
  }
  return hosts;
}

bool passesLocalRankArgument(const RawFlags& raw) {
  if (raw.passLocalRank && raw.noLocalRank) {
    throw Error(ErrorCode::InvalidArgument, "--pass-local-rank and --no_local_rank contradict each other; give one");
  }
  const bool deepSpeedCommandLine = !raw.numGpus.empty() || !raw.numNodes.empty();
  return raw.passLocalRank || (deepSpeedCommandLine && !raw.noLocalRank);
}

}  // namespace pltrun
