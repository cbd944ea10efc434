#include "launcher/command_line/remote_flags.h"

#include "launcher/command_line/deepspeed_flags.h"
#include "launcher/plan/host_list.h"
#include "launcher/plan/text_parsing.h"
#include "launcher/plan/worker_count.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

std::vector<HostSlots> hostsGiven(const RawFlags& raw, const FileReader& readOwnFile, std::vector<LaunchNote>& notes) {
  if (!raw.hosts.empty() && !raw.hostfile.empty()) {
    throw Error(ErrorCode::InvalidArgument, "--hosts and --hostfile exclude each other; give one");
  }
  if (!raw.hosts.empty()) return parseHostList(raw.hosts);
  if (raw.hostfile.empty()) return {};
  std::vector<HostSlots> hosts = readHostfile(raw.hostfile, readOwnFile);
  notes.push_back({false, "read " + countedNoun(static_cast<long long>(hosts.size()), "host") + " from hostfile " +
                              shownPath(raw.hostfile)});
  return hosts;
}

// -x NAME or -x NAME=VALUE: NAME must be a variable's name.
std::vector<std::string> checkedExports(const std::vector<std::string>& exports) {
  for (const std::string& name : exports) {
    if (!isVariableName(name.substr(0, name.find('=')))) {
      throwInvalidFlag("-x", name, "expected a variable name, or NAME=VALUE");
    }
  }
  return exports;
}

void applyDriverFlags(const RawFlags& raw, std::vector<HostSlots> hosts, LaunchConfig& config) {
  if (!raw.nnodes.empty() || !raw.rdzvEndpoint.empty() || !raw.nodeRank.empty() || !raw.masterAddr.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "with --hosts/--hostfile pltrun places every node itself; drop --nnodes, --node-rank, "
                "--rdzv-endpoint and --master-addr");
  }
  RemoteLaunchSettings& remote = config.remote;
  remote.hosts = applyDeepSpeedToHosts(raw, selectHosts(std::move(hosts), raw.include, raw.exclude));
  if (remote.hosts.empty()) throw Error(ErrorCode::InvalidArgument, "--include/--exclude left no host to run on");
  if (!raw.totalProcesses.empty()) {
    remote.hosts = firstSlots(std::move(remote.hosts), parseTotalProcesses(raw.totalProcesses));
  }
  if (!raw.sshPort.empty()) {
    remote.sshPort =
        static_cast<int>(parseIntegerFlag("--ssh-port", raw.sshPort, 1, 65535, "expected a TCP port 1..65535"));
  }
  remote.sshIdentity = raw.sshIdentity;
  if (!raw.remoteCommand.empty() && raw.remoteCommand.find("{host}") == std::string::npos) {
    throwInvalidFlag("--remote-command", raw.remoteCommand,
                     "expected a command with {host}, e.g. \"ssh -p 2222 {host}\"");
  }
  remote.remoteCommand = raw.remoteCommand;
  remote.networkInterface = raw.networkInterface;
  remote.remotePltrun = raw.remotePltrun;
  // The job spans the hosts: the driver runs the c10d rendezvous for them.
  config.rdzv.backend = RendezvousBackend::C10d;
  config.rdzv.minNodes = config.rdzv.maxNodes = config.nnodes = static_cast<int>(remote.hosts.size());
}

}  // namespace

void applyRemoteFlags(const RawFlags& raw, LaunchConfig& config, const FileReader& readOwnFile) {
  config.exitWithParent = raw.exitWithParent;
  // mpirun's -x and --env-file reach the workers on one node too.
  config.remote.exports = checkedExports(raw.exports);
  if (!raw.envFile.empty()) config.remote.envFile = raw.envFile;
  std::vector<HostSlots> hosts = hostsGiven(raw, readOwnFile, config.notes);
  if (!hosts.empty()) {
    applyDriverFlags(raw, std::move(hosts), config);
    return;
  }
  if (!raw.sshPort.empty() || !raw.sshIdentity.empty() || !raw.remoteCommand.empty()) {
    throw Error(ErrorCode::InvalidArgument,
                "-p/--ssh-port, --ssh-identity and --remote-command go with --hosts or --hostfile");
  }
}

}  // namespace pltrun
