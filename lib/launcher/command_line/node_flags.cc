#include "launcher/command_line/node_flags.h"

#include "launcher/command_line/rendezvous_flags.h"
#include "launcher/command_line/slurm.h"
#include "launcher/plan/slurm_signals.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// Without --rdzv-backend the rendezvous is static, as torchrun's, unless the job can only
// be elastic: a node-count range, or an endpoint to meet at on several nodes.
RendezvousBackend chooseBackend(const RawFlags& raw, const RendezvousSettings& rdzv) {
  if (!raw.rdzvBackend.empty()) return parseRendezvousBackend("--rdzv-backend", raw.rdzvBackend);
  const bool elastic = rdzv.minNodes < rdzv.maxNodes;
  const bool meets = !raw.rdzvEndpoint.empty() && rdzv.maxNodes > 1;
  return elastic || meets ? RendezvousBackend::C10d : RendezvousBackend::Static;
}

// --rdzv-endpoint. On one node there is nobody to meet (torch's documented single-node form
// is "--rdzv-backend=c10d --rdzv-endpoint=localhost:0"): checked, stored, unused. With an
// explicit static backend on several nodes it is rank 0's store, as torchrun reads it: it
// replaces --master-addr and --master-port.
void applyEndpoint(const RawFlags& raw, LaunchConfig& config) {
  RendezvousSettings& rdzv = config.rdzv;
  const bool multiNode = rdzv.maxNodes > 1;
  if (rdzv.backend == RendezvousBackend::Etcd) {
    if (raw.rdzvEndpoint.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "--rdzv-backend etcd needs --rdzv-endpoint HOST[:PORT],HOST[:PORT],... naming the etcd members");
    }
    rdzv.etcd.members = parseEtcdMembers("--rdzv-endpoint", raw.rdzvEndpoint);
    rdzv.endpointHost = rdzv.etcd.members.front().host;  // where this node's address is looked for
    rdzv.endpointPort = rdzv.etcd.members.front().port;
    return;
  }
  if (raw.rdzvEndpoint.empty()) {
    if (!multiNode || rdzv.backend != RendezvousBackend::C10d) return;
    if (!raw.rdzvBackend.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "--rdzv-backend c10d with several nodes needs --rdzv-endpoint HOST[:PORT], the same on every node");
    }
    throw Error(ErrorCode::InvalidArgument,
                "--nnodes " + raw.nnodes +
                    ": a node-count range uses the c10d rendezvous, which needs --rdzv-endpoint HOST[:PORT], the "
                    "same on every node");
  }
  if (multiNode && rdzv.backend == RendezvousBackend::Static) {
    Endpoint endpoint = parseEndpoint("--rdzv-endpoint", raw.rdzvEndpoint, -1);
    if (endpoint.port < 0) {
      throwInvalidFlag("--rdzv-endpoint", raw.rdzvEndpoint,
                       "a static rendezvous needs HOST:PORT, rank 0's node and a fixed port");
    }
    config.masterAddr = endpoint.host;
    if (endpoint.port == 0) {
      config.masterPort.reset();  // refused below: the other nodes could not know the port
    } else {
      config.masterPort = endpoint.port;
    }
    return;
  }
  Endpoint endpoint = parseEndpoint("--rdzv-endpoint", raw.rdzvEndpoint, kDefaultRendezvousPort);
  rdzv.endpointHost = endpoint.host;
  rdzv.endpointPort = endpoint.port;
}

// --nnodes, and the backend it implies.
void applyNodeCount(const RawFlags& raw, LaunchConfig& config) {
  RendezvousSettings& rdzv = config.rdzv;
  if (!raw.nnodes.empty()) {
    NodeRange range = parseNodeRange("--nnodes", raw.nnodes);
    rdzv.minNodes = range.minNodes;
    rdzv.maxNodes = range.maxNodes;
  }
  config.nnodes = rdzv.maxNodes;  // static: the fixed count; c10d: the most the job can have
  if (raw.standalone && rdzv.maxNodes != 1) {
    throwInvalidFlag("--nnodes", raw.nnodes, "--standalone runs exactly one node");
  }
  rdzv.backend = chooseBackend(raw, rdzv);
  if (rdzv.backend == RendezvousBackend::Static && rdzv.minNodes < rdzv.maxNodes) {
    throwInvalidFlag("--nnodes", raw.nnodes,
                     "a static rendezvous needs a fixed node count; use --rdzv-backend c10d --rdzv-endpoint "
                     "HOST[:PORT]");
  }
}

// --node-rank: this node's rank (static), or a preference (c10d, where torchrun ignores it).
void applyNodeRank(const RawFlags& raw, LaunchConfig& config) {
  if (raw.nodeRank.empty()) return;
  const int last = config.nnodes - 1;
  const bool multiNodeC10d = config.rdzv.backend != RendezvousBackend::Static && config.rdzv.maxNodes > 1;
  if (multiNodeC10d) {
    config.rdzv.nodeRankHint = static_cast<int>(parseIntegerFlag(
        "--node-rank", raw.nodeRank, 0, last,
        "expected 0.." + std::to_string(last) + " (one less than the largest --nnodes); a hint with c10d"));
  } else {
    config.nodeRank = static_cast<int>(parseIntegerFlag(
        "--node-rank", raw.nodeRank, 0, last, "expected 0.." + std::to_string(last) + " (one less than --nnodes)"));
  }
}

// etcd's --rdzv-conf keys only with etcd, and its certificates only over https.
void checkEtcdConf(const RawFlags& raw, const RendezvousSettings& rdzv) {
  if (rdzv.backend != RendezvousBackend::Etcd && !(rdzv.etcd == EtcdSettings{})) {
    throwInvalidFlag("--rdzv-conf", raw.rdzvConf,
                     "protocol, cacert, cert, key, etcd_prefix, user and password_file need --rdzv-backend etcd");
  }
  if (!rdzv.etcd.https && !(rdzv.etcd.caFile.empty() && rdzv.etcd.certFile.empty() && rdzv.etcd.keyFile.empty())) {
    // Certificates given for a plain connection are a mistake, never a wish to go unencrypted.
    throwInvalidFlag("--rdzv-conf", raw.rdzvConf, "cacert, cert and key need protocol=https");
  }
}

}  // namespace

void applySlurmDefaults(RawFlags& raw, LaunchConfig& config, const Environment& env, const FileReader& readFile) {
  // Any node flag given: Slurm is left alone, the flags say it all.
  const bool nodeFlagsGiven = !raw.nnodes.empty() || !raw.rdzvEndpoint.empty() || !raw.masterAddr.empty() ||
                              !raw.masterPort.empty() || !raw.nodeRank.empty() || !raw.rdzvBackend.empty() ||
                              raw.standalone;
  if (nodeFlagsGiven) return;
  // Started by a worker (of this or another launcher): the SLURM_* variables it inherited
  // belong to the outer job, whose rendezvous this pltrun must not join.
  if (env.count("TORCHELASTIC_RUN_ID") != 0) return;
  std::optional<SlurmJob> job = detectSlurm(env);
  if (!job) return;
  if (std::string misuse = slurmMisuse(*job); !misuse.empty()) throw Error(ErrorCode::InvalidArgument, misuse);
  // The job id as run id, on one node too: what the logs and TORCHELASTIC_RUN_ID show.
  if (raw.runId.empty()) raw.runId = job->jobId;
  config.slurmSummary = job->describe();
  if (job->inStep()) config.slurmSignalReach = readSlurmSignalReach(env, readFile);
  if (job->nnodes < 2) return;
  // The node count, this node's rank, the endpoint on the first node (which hosts the store)
  // at a port derived from the job id.
  raw.nnodes = std::to_string(job->nnodes);
  raw.nodeRank = std::to_string(job->nodeRank);
  raw.rdzvEndpoint = endpointText(Endpoint{job->hosts.front(), job->port});
  // The step's nodes by Slurm's names, so a node that never starts is named (expected_hosts=
  // and node_name= in --rdzv-conf, applied after this, override them).
  config.rdzv.expectedHosts = job->hosts;
  config.rdzv.nodeName = job->hosts[job->nodeRank];
}

void applyNodeFlags(const RawFlags& raw, LaunchConfig& config, const Environment& env) {
  applyNodeCount(raw, config);
  // --master-addr and --master-port belong to the static rendezvous; with c10d they are
  // checked and kept, and unused, as torchrun ignores them (the rendezvous decides).
  if (!raw.masterAddr.empty()) config.masterAddr = raw.masterAddr;
  if (!raw.masterPort.empty()) {
    int port = static_cast<int>(parseIntegerFlag("--master-port", raw.masterPort, 0, 65535,
                                                 "expected a TCP port 1..65535, or 0 to pick a free one"));
    if (port != 0) config.masterPort = port;
  }
  RendezvousSettings& rdzv = config.rdzv;
  applyEndpoint(raw, config);
  if (!raw.rdzvConf.empty()) applyRendezvousConf(raw.rdzvConf, rdzv);
  applySecretFileDefault(env, rdzv);
  checkEtcdConf(raw, rdzv);
  if (!raw.localAddr.empty()) rdzv.localAddr = raw.localAddr;
  applyNodeRank(raw, config);
  if (raw.standalone) {
    config.standalone = true;
    config.masterAddr = "127.0.0.1";
    config.masterPort.reset();
  }
  if (config.nnodes > 1 && rdzv.backend == RendezvousBackend::Static && !config.masterPort) {
    throw Error(ErrorCode::InvalidArgument,
                "--nnodes " + std::to_string(config.nnodes) +
                    ": a multi-node static job needs --master-addr and --master-port, the same on every node (or "
                    "--rdzv-backend c10d --rdzv-endpoint HOST[:PORT])");
  }
}

}  // namespace pltrun
