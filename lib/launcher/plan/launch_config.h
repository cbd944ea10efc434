#pragma once
// Everything the command line decides, after parsing and validation but before anything
// is probed (GPUs, ports) or started.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/endpoint.h"
#include "launcher/plan/device_selection.h"
#include "launcher/plan/host_list.h"
#include "launcher/plan/numa_binding.h"
#include "launcher/plan/slurm_signals.h"
#include "launcher/plan/stall_timeout.h"
#include "launcher/plan/stream_selection.h"
#include "launcher/plan/worker_count.h"

namespace pltrun {

/// How PROGRAM is started.
enum class ProgramKind {
  Auto,      ///< `.py` runs under Python, anything else is executed directly
  Module,    ///< `-m`: PROGRAM is a Python module
  NoPython,  ///< `--no-python`: PROGRAM is executed directly, whatever its name
  Script,    ///< `--run-path`: PROGRAM is a Python script, whatever its name (torchrun's run_path)
};

/// How the nodes of a job meet.
enum class RendezvousBackend {
  Static,  ///< fixed node count; rank 0's node at --master-addr:--master-port
  C10d,    ///< torchrun's dynamic rendezvous: nodes meet at --rdzv-endpoint, MIN..MAX of them
  Etcd,    ///< the same rounds, kept in an etcd v3 cluster: no agent hosts anything vital
};

/// The etcd cluster of --rdzv-backend etcd: --rdzv-endpoint's comma-separated members and
/// the --rdzv-conf keys protocol, cacert, cert, key, etcd_prefix, user, password_file.
struct EtcdSettings {
  std::vector<Endpoint> members;
  bool https = false;    ///< protocol=https
  std::string caFile;    ///< cacert: verifies the members' certificates (https)
  std::string certFile;  ///< cert, key: this agent's client certificate (https)
  std::string keyFile;
  std::string prefix = "/";  ///< etcd_prefix: the job's keys are PREFIX/pltrun/rdzv/RUN_ID/...
  std::string user;          ///< user, password_file: etcd authentication
  std::string passwordFile;

  bool operator==(const EtcdSettings& other) const {
    return members == other.members && https == other.https && caFile == other.caFile && certFile == other.certFile &&
           keyFile == other.keyFile && prefix == other.prefix && user == other.user &&
           passwordFile == other.passwordFile;
  }
};

/// The rendezvous of elastic multi-node jobs (c10d or etcd); static for a job of fixed nodes.
/// Times come from --rdzv-conf (seconds there, decimals allowed); the defaults are torchrun's.
struct RendezvousSettings {
  RendezvousBackend backend = RendezvousBackend::Static;
  int minNodes = 1;
  int maxNodes = 1;
  std::string endpointHost;                           ///< --rdzv-endpoint host (IPv6 without brackets)
  int endpointPort = 29400;                           ///< torchrun's default; 0 = the hosting agent picks a free port
  std::chrono::milliseconds joinTimeout{600000};      ///< join_timeout (alias: timeout)
  std::chrono::milliseconds lastCallTimeout{30000};   ///< last_call_timeout
  std::chrono::milliseconds closeTimeout{30000};      ///< close_timeout
  std::chrono::milliseconds keepAliveInterval{5000};  ///< keep_alive_interval (alias: heartbeat_timeout)
  int keepAliveMaxAttempt = 3;                        ///< keep_alive_max_attempt
  std::chrono::milliseconds readTimeout{60000};       ///< read_timeout: one store operation
  std::optional<bool> isHost;                         ///< is_host; empty = decide by address
  std::optional<int> nodeRankHint;                    ///< --node-rank given with c10d
  std::string localAddr;                              ///< --local-addr; empty = detect
  /// expected_hosts (Slurm's hostlist grammar), else Slurm's node list or the driver's hosts:
  /// the nodes the job expects, named in waiting lines, the join timeout and `pltrun status`.
  std::vector<std::string> expectedHosts;
  /// node_name, else Slurm's name for this node or the driver's for this host: the name this
  /// node has among expectedHosts; empty = its host name (matched loosely, expected_nodes.h).
  std::string nodeName;
  /// secret_file, else $PLTRUN_SECRET_FILE: the agents and the store share the secret in
  /// it ("-": standard input); empty = no authentication.
  std::string secretFile;
  EtcdSettings etcd;  ///< backend == Etcd
};

/// A job started from one shell on many hosts (--hosts, --hostfile): this pltrun is the
/// driver, which hosts the rendezvous store and starts one agent per host remotely.
struct RemoteLaunchSettings {
  std::vector<HostSlots> hosts;      ///< after --include/--exclude; empty: not a driver
  std::optional<int> sshPort;        ///< --ssh-port
  std::string sshIdentity;           ///< --ssh-identity
  std::string remoteCommand;         ///< --remote-command template with {host}; empty: ssh
  std::vector<std::string> exports;  ///< -x NAME or -x NAME=VALUE
  std::optional<std::string> envFile;
  std::string networkInterface;  ///< where the hosts reach the driver; empty: the route to them
  std::string remotePltrun;      ///< pltrun on the hosts; empty: this binary's path
};

/// A line the launcher logs when it starts, for what the command line read or decided from
/// what it found on disk ("read 2 hosts from hostfile ./hosts", "-H localhost:1: read as a
/// host list (no file of that name)"), or a warning about a flag with no effect here.
struct LaunchNote {
  bool warning = false;
  std::string text;
};

struct LaunchConfig {
  // What to run.
  std::string program;
  std::vector<std::string> programArgs;
  ProgramKind programKind = ProgramKind::Auto;
  /// --preload: Python modules a warm interpreter per node imports once, from which every
  /// worker is forked (lib/launcher/process/zygote.h); empty: every worker starts fresh.
  std::vector<std::string> preload;

  // How many workers, on which devices: parsed here, resolved against the GPUs and CPUs
  // once they are counted (worker_layout.h); devices, when given, wins.
  std::optional<WorkerCount> nprocPerNode;  ///< empty: 1, or the number of --devices
  std::optional<DeviceSelection> devices;
  /// --auto-select-gpus: the GPUs are chosen among the free ones on each node, at start
  /// (gpusToAutoSelect says how many; placement/gpu_auto_select.h chooses and locks them).
  bool autoSelectGpus = false;

  // Where this node sits in the job (static rendezvous). With c10d, nnodes is rdzv.maxNodes
  // and nodeRank stays 0: the rendezvous assigns the real rank.
  int nnodes = 1;
  int nodeRank = 0;
  std::string masterAddr = "127.0.0.1";
  std::optional<int> masterPort;  ///< empty: the launcher picks a free port
  std::string runId;              ///< empty: a random id is generated
  std::string role = "default";
  bool standalone = false;
  /// The launcher hosts the workers' TCPStore at MASTER_ADDR:MASTER_PORT, new for every
  /// attempt (single node) or round (elastic: node rank 0's agent), so no worker opens a
  /// port (TORCHELASTIC_USE_AGENT_STORE=True). false (--no-agent-store): rank 0's worker
  /// hosts it, as under torchrun.
  bool agentStore = true;
  /// --nnodes MIN:MAX, --rdzv-backend, --rdzv-endpoint, --rdzv-conf, --local-addr.
  RendezvousSettings rdzv;
  RemoteLaunchSettings remote;
  /// Started by a driver: end (SIGTERM, as a stop signal) when the parent (sshd's session)
  /// ends, so a dropped connection leaves no remote agent or worker behind.
  bool exitWithParent = false;
  /// Set inside a Slurm job (srun's task, or the batch script of a one-node job): what was
  /// detected, for the log.
  std::optional<std::string> slurmSummary;
  /// Inside an srun step: whom slurmstepd's own signals reach (slurm_signals.h).
  SlurmSignalReach slurmSignalReach = SlurmSignalReach::TaskGroup;

  // Supervision.
  int maxRestarts = 0;
  /// --max-no-progress-restarts: restarts in a row whose ranks pass no earlier attempt's
  /// highest heartbeat counter before restarting stops (restart_progress.h); 0: no check.
  int maxNoProgressRestarts = 3;
  /// --max-node-blames: elastic rounds in a row ended by one node's workers, while the other
  /// nodes' ran, before that node is excluded for the rest of the run (node_blame.h); 0: never.
  int maxNodeBlames = 2;
  std::chrono::milliseconds termTimeout{30000};  ///< --term-timeout, --shutdown-timeout
  /// Node health (issue 46; health/node_health.h): the site's command (empty: none), how long
  /// it may run, how long an unhealthy elastic node waits before it checks again.
  std::string healthCheck;
  std::chrono::milliseconds healthCheckTimeout{60000}, healthCheckInterval{30000};
  /// --metrics ADDR:PORT (issue 47; metrics/metrics_server.h): where Prometheus scrapes this
  /// launcher; port 0 picks one (printed); "PORT" or ":PORT" alone is loopback. None: off.
  std::optional<Endpoint> metrics;
  /// torchrun's --virtual-local-rank: every worker has LOCAL_RANK 0 and sees only its GPU.
  bool virtualLocalRank = false;
  /// torchrun's --numa-binding: each worker bound to the CPUs near its GPU (numa_binding.h).
  std::optional<NumaMode> numaBinding;
  std::optional<StallTimeout> stallTimeout;  ///< --stall-timeout; empty: off
  /// TORCHELASTIC_ENABLE_FILE_TIMER=1 in pltrun's environment: torch's FileTimer is served,
  /// at TORCHELASTIC_TIMER_FILE when that is set (torchrun's variables).
  bool fileTimer = false;
  std::string fileTimerPath;

  // Output.
  std::optional<std::string> logDir;
  StreamSelection redirects;                         ///< streams kept out of the console, per local rank
  StreamSelection tee;                               ///< streams also written to log files, per local rank
  std::optional<std::vector<int>> localRanksFilter;  ///< empty: every local rank
  bool prefixOutput = true;
  /// TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE: the console prefix instead of "[rank N] "
  /// (line_prefix_template.h).
  std::optional<std::string> linePrefixTemplate;
  /// torchrun's --duplicate-stdout-filters / --duplicate-stderr-filters: lines of any worker
  /// that contain one of these go to DIR/RUN_ID/attempt_N/filtered_{stdout,stderr}.log too.
  std::vector<std::string> duplicateStdoutFilters, duplicateStderrFilters;
  bool quiet = false;    ///< launcher's own messages: only warnings and errors
  bool verbose = false;  ///< launcher's own messages: its debugging lines too
  /// Each worker's argv gets --local_rank=N before the program's own arguments (DeepSpeed's
  /// way; deepspeed_flags.h says when).
  bool localRankArgument = false;

  /// The parser's lines for the log (LaunchNote), in the order they arose.
  std::vector<LaunchNote> notes;
};

}  // namespace pltrun
