#include "launcher/command_line/deepspeed_flags.h"

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr long long kMostGpus = 1024;

int countFlag(const std::string& flag, const std::string& value) {
  return static_cast<int>(parseIntegerFlag(flag, value, 1, kMostGpus, "expected a positive whole number"));
}

// A selection's errors name the flag the user typed and its text, not --devices.
DeviceSelection typedAs(DeviceSelection selection, const std::string& flag, const std::string& text) {
  selection.flag = flag;
  selection.spelled = text;
  return selection;
}

// DeepSpeed's include/exclude on one node name the GPUs of "localhost", the one host its
// launcher knows without a hostfile.
DeviceSelection localGpus(const HostSelection& chosen) {
  std::vector<int> indices;
  bool whole = false;
  for (const Pick& pick : parsePicks(chosen.flag, chosen.text)) {
    if (pick.host != "localhost") {
      throwInvalidFlag(chosen.flag, chosen.text,
                       "without --hosts/--hostfile only this node's GPUs can be named, as localhost:0,1; to run on '" +
                           pick.host + "' give -H/--hostfile");
    }
    whole = pick.whole;
    indices = pick.indices;
  }
  if (!chosen.including()) {
    if (whole) throwInvalidFlag(chosen.flag, chosen.text, "excludes every GPU of this node; nothing would run");
    return typedAs(allDevicesBut(indices), chosen.flag, chosen.text);
  }
  return typedAs(whole ? parseDeviceSelection("-1") : listedDevices(indices), chosen.flag, chosen.text);
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
  const std::optional<HostSelection> chosen = hostSelection(raw.include, raw.exclude);
  if (!raw.numGpus.empty()) {
    if (chosen) {
      throw Error(ErrorCode::InvalidArgument,
                  "--num_gpus and --include/--exclude both choose this node's GPUs; give one of them");
    }
    requireOneWorkerCount(raw, "--num_gpus");
    // DeepSpeed's: GPUs 0..N-1 (CUDA_VISIBLE_DEVICES=0,...,N-1), refused where fewer are visible.
    const int count = countFlag("--num_gpus", raw.numGpus);
    config.devices = typedAs(parseDeviceSelection(std::to_string(count)), "--num_gpus", raw.numGpus);
    return;
  }
  if (!chosen) return;
  requireOneWorkerCount(raw, chosen->flag);
  config.devices = localGpus(*chosen);
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
