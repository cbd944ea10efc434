#include "launcher/command_line/flag_declarations.h"

#include <algorithm>
#include <cctype>

#include "launcher/command_line/flag_names.h"
#include "launcher/command_line/site_config.h"

namespace pltrun {
namespace {

// CLI11 shows "(Env:NAME)" after an option it reads NAME for; pltrun reads the variables
// itself, so it adds the same words to the same place (pltrun uses no needs or excludes,
// which CLI11 would print after them).
class VariablesInHelp : public CLI::Formatter {
 public:
  explicit VariablesInHelp(std::shared_ptr<const FlagVariables> variables) : variables_(std::move(variables)) {}

  // One usage line, pltrun's, in place of CLI11's "pltrun [OPTIONS]".
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: pltrun [options] PROGRAM [ARGS...]\n";
  }

  std::string make_option_opts(const CLI::Option* option) const override {
    std::string text = CLI::Formatter::make_option_opts(option);
    for (const auto& [flag, variable] : *variables_) {
      if (flag == option) return text + " (" + get_label("Env") + ":" + variable + ")";
    }
    return text;
  }

 private:
  std::shared_ptr<const FlagVariables> variables_;
};

// Adds flags to an app in pltrun's spellings: "--long-name" and "--long_name", an optional
// short name, and PET_LONG_NAME as the variable that gives the default.
class FlagDeclarer {
 public:
  FlagDeclarer(CLI::App& app, FlagVariables& variables) : app_(app), variables_(variables) {}

  /// The --help section the flags declared from now on are listed under.
  void section(const std::string& name) { section_ = name; }

  CLI::Option* valued(const std::string& dashed, std::string& target, const std::string& help,
                      const std::string& shortName = "") {
    return remember(app_.add_option(names(dashed, shortName), target, help), dashed);
  }

  void flag(const std::string& dashed, bool& target, const std::string& help, const std::string& shortName = "") {
    remember(app_.add_flag(names(dashed, shortName), target, help), dashed);
  }

  CLI::Option* inSection(CLI::Option* option) const { return option->group(section_); }

  CLI::App& app() { return app_; }

 private:
  static std::string underscored(const std::string& dashed) {
    std::string text = dashed;
    std::replace(text.begin(), text.end(), '-', '_');
    return text;
  }

  static std::string names(const std::string& dashed, const std::string& shortName) {
    std::string spelled = (shortName.empty() ? "" : shortName + ",") + "--" + dashed;
    if (underscored(dashed) != dashed) spelled += ",--" + underscored(dashed);
    return spelled;
  }

  CLI::Option* remember(CLI::Option* option, const std::string& dashed) {
    inSection(option);
    std::string variable = "PET_" + underscored(dashed);
    std::transform(variable.begin(), variable.end(), variable.begin(), ::toupper);
    variables_.emplace_back(option, variable);
    return option;
  }

  CLI::App& app_;
  FlagVariables& variables_;
  std::string section_ = "Options";
};

void declareWorkerAndNodeFlags(FlagDeclarer& declare, RawFlags& raw) {
  declare.section("Workers on this node");
  declare.valued(flag_name::kNprocPerNode, raw.nprocPerNode, "workers on this node: N, gpu, cpu or auto (default 1)");
  declare.valued(flag_name::kDevices, raw.devices,
                 "Lightning's devices: 3 = first three GPUs, \"1, 3\" = GPUs 1 and 3, -1 = all, 0 = none");
  declare.flag(flag_name::kAutoSelectGpus, raw.autoSelectGpus,
               "Lightning's auto_select_gpus: --devices N takes N GPUs no process occupies (-1: every free one; "
               "without --devices one per worker), locked against other pltruns for the job's life; too few free: "
               "exit 2 naming the holders");
  declare.valued(flag_name::kMaxRestarts, raw.maxRestarts, "restarts of the worker group after a failure (default 0)");
  declare.valued(flag_name::kMaxNoProgressRestarts, raw.maxNoProgressRestarts,
                 "stop restarting (exit 125) after K restarts in a row in which no rank's heartbeat counter "
                 "($PLTRUN_HEARTBEAT) passed the highest reached before (default 3; 0: never)");
  declare.valued(flag_name::kMaxNodeBlames, raw.maxNodeBlames,
                 "elastic jobs: a node whose workers ended K rounds in a row while the other nodes' ran leaves the "
                 "job for the rest of the run (default 2; 0: never)");
  declare.valued("np", raw.totalProcesses,
                 "horovodrun's and mpirun's -np N: N workers in all; on one node, --nproc-per-node N; with "
                 "--hosts/--hostfile, the first N slots in host order");
  declare.valued(
      "num-gpus", raw.numGpus,
      "DeepSpeed's: GPUs per node; on one node N workers on GPUs 0..N-1 (--devices N), with hosts at most N slots each "
      "(and --local_rank=N is passed, unless --no_local_rank)");
  declare.section("Several nodes (static or elastic)");
  declare.valued(flag_name::kNnodes, raw.nnodes,
                 "number of nodes: N, or MIN:MAX for an elastic job (c10d rendezvous) (default 1)");
  declare.valued(flag_name::kNodeRank, raw.nodeRank,
                 "this node's rank, 0..nnodes-1 (static; default 0); with c10d a hint, 0..MAX-1");
  declare.valued("master-addr", raw.masterAddr,
                 "static: address of the rank-0 node (default 127.0.0.1); ignored with c10d");
  declare.valued("master-port", raw.masterPort,
                 "static: port of rank 0's store (default: a free port); ignored with c10d");
  declare.valued(flag_name::kRdzvId, raw.runId,
                 "the job's id, the same on every node; TORCHELASTIC_RUN_ID (default: random)");
  declare.valued("run-id", raw.runIdAlias, "same as --rdzv-id");
  declare.valued(flag_name::kRdzvBackend, raw.rdzvBackend,
                 "static (fixed node count; --master-addr/--master-port), c10d (elastic; nodes meet at "
                 "--rdzv-endpoint) or etcd (elastic; the rounds kept in etcd, any node may die). Default: static, c10d "
                 "with --nnodes MIN:MAX or with --rdzv-endpoint on several nodes");
  declare.valued(flag_name::kRdzvEndpoint, raw.rdzvEndpoint,
                 "c10d: HOST[:PORT] where the nodes meet, the same on every node (default port 29400; IPv6 as "
                 "[ADDR]:PORT); unused on one node. etcd: the members, HOST[:PORT],... (default port 2379)");
  declare.valued(flag_name::kRdzvConf, raw.rdzvConf,
                 "c10d settings KEY=VALUE,...: join_timeout, last_call_timeout, close_timeout, keep_alive_interval, "
                 "read_timeout (seconds), keep_alive_max_attempt, is_host, secret_file (default $PLTRUN_SECRET_FILE), "
                 "expected_hosts (the nodes to name while waiting: a,b or gpu-[01-08]), node_name; "
                 "etcd: also etcd_prefix, user, password_file, protocol (http or https), cacert, cert, key");
  declare.valued("local-addr", raw.localAddr, "this node's address as the other nodes reach it (default: detected)");
  declare.valued("start-timeout", raw.startTimeout,
                 "horovodrun's: seconds the nodes get to start and meet (the rendezvous' join_timeout)");
  declare.valued(flag_name::kRole, raw.role, "ROLE_NAME of the workers (default 'default')");
}

void declareOutputFlags(FlagDeclarer& declare, RawFlags& raw) {
  declare.section("Output");
  declare.valued(flag_name::kLogDir, raw.logDir, "keep every worker's output under DIR/RUN_ID/attempt_N/LOCAL_RANK/");
  declare.valued("redirects", raw.redirects,
                 "streams kept out of the console: 0 none, 1 out, 2 err, 3 both, or 0:1,1:2", "-r");
  declare.valued("tee", raw.tee, "streams also written to log files (same values as --redirects)", "-t");
  declare.valued("local-ranks-filter", raw.localRanksFilter, "local ranks whose output reaches the console, e.g. 0,1");
  declare.valued("log-line-prefix-template", raw.linePrefixTemplate,
                 "torchrun's console prefix, e.g. '[${role_name}${local_rank}]:' (also ${rank}, ${hostname}); "
                 "default '[rank N] '");
  declare.valued("duplicate-stdout-filters", raw.duplicateStdoutFilters,
                 "also write every worker's stdout lines that contain one of these (a,b; ,, for a comma) to "
                 "DIR/RUN_ID/attempt_N/filtered_stdout.log");
  declare.valued("duplicate-stderr-filters", raw.duplicateStderrFilters,
                 "the same for stderr, into filtered_stderr.log");
  declare.flag(flag_name::kNoPrefix, raw.noPrefix, "no [rank N] prefix on worker output");
  declare.flag(flag_name::kQuiet, raw.quiet, "only warnings and errors from pltrun itself", "-q");
  declare.flag(flag_name::kVerbose, raw.verbose, "also pltrun's debugging lines (horovodrun's --verbose)");
}

void declareProgramFlags(FlagDeclarer& declare, RawFlags& raw) {
  declare.section("Program and supervision");
  declare.valued(flag_name::kTermTimeout, raw.termTimeout,
                 "seconds between SIGTERM and SIGKILL when stopping workers (default 30)");
  declare.valued(flag_name::kStallTimeout, raw.stallTimeout,
                 "a worker that sent a heartbeat ($PLTRUN_HEARTBEAT) and then none for SECONDS has stalled: "
                 "report every rank's stack and the culprit, stop the workers, restart (or exit 124); auto: 5x the "
                 "longest interval seen, at least 60 s; 0 or off: none (the default)");
  declare.valued("shutdown-timeout", raw.shutdownTimeout, "torchrun 2.14's name for --term-timeout");
  declare.flag("virtual-local-rank", raw.virtualLocalRank,
               "every worker gets LOCAL_RANK=0 and CUDA_VISIBLE_DEVICES naming only its own GPU (torchrun's)");
  declare.valued("print-completion", raw.printCompletion, "print a completion script for bash, zsh or tcsh and exit");
  declare.valued("monitor-interval", raw.monitorInterval,
                 "accepted for torchrun compatibility; pltrun reacts to exits at once");
  declare.valued("start-method", raw.startMethod,
                 "accepted for torchrun compatibility; workers are always separate processes");
  declare.valued("signals-to-handle", raw.signalsToHandle,
                 "accepted for torchrun compatibility: pltrun always forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, "
                 "SIGUSR1 and SIGUSR2");
  declare.valued("event-log-handler", raw.eventLogHandler,
                 "torchrun's event handler plugin: only null (pltrun's events go to events.jsonl under --log-dir)");
  declare.valued("logs-specs", raw.logsSpecs, "torchrun's log-layout plugin: refused (see --log-dir, -r, -t)");
  declare.valued("numa-binding", raw.numaBinding,
                 "bind each worker to the CPUs near its GPU (local rank N: GPU N): node, socket, exclusive or "
                 "core-complex, as torchrun");
  declare.flag("standalone", raw.standalone, "single-node job on localhost with a free port and a random run id");
  declare.flag(flag_name::kModule, raw.module, "PROGRAM is a Python module (python -m)", "-m");
  declare.valued(flag_name::kPreload, raw.preload,
                 "Python modules (e.g. torch) imported once per node by a warm interpreter that forks every "
                 "worker of every attempt: starts and restarts skip those imports (Python programs only)");
  declare.flag(flag_name::kNoPython, raw.noPython, "execute PROGRAM directly, even if it ends in .py");
  declare.flag(flag_name::kRunPath, raw.runPath,
               "PROGRAM is a Python script whatever its name (torchrun's --run-path; run with python -u)");
  declare.flag(flag_name::kPassLocalRank, raw.passLocalRank,
               "pass --local_rank=N as the program's first argument, as DeepSpeed does (the default under "
               "--num_gpus/--num_nodes)");
  declare.flag("no-local-rank", raw.noLocalRank, "DeepSpeed's: do not pass --local_rank=N (LOCAL_RANK is set anyway)");
  declare.flag("oversubscribe", raw.oversubscribe,
               "mpirun's: accepted; pltrun never limits a node's workers to its cores (-np beyond the hosts' slots "
               "is still refused)");
  declare.valued("bind-to", raw.bindTo, "mpirun's: only none is accepted (for CPU binding see --numa-binding)");
  declare.flag(flag_name::kNoAgentStore, raw.noAgentStore,
               "rank 0 hosts the workers' TCPStore (torchrun's static behaviour) instead of pltrun");
}

void declareHealthFlags(FlagDeclarer& declare, RawFlags& raw) {
  declare.section("Node health (before a static job starts and before an agent joins each round)");
  declare.valued("health-check", raw.healthCheck,
                 "a command (run by /bin/sh -c) that says whether this node may take part: exit 0 healthy; "
                 "besides it, NVML's GPU checks run (pltrun health runs them alone)");
  declare.valued("health-check-timeout", raw.healthCheckTimeout,
                 "seconds --health-check may run before it is killed and counts as failed (default 60)");
  declare.valued("health-check-interval", raw.healthCheckInterval,
                 "seconds an unhealthy elastic node waits before it checks again (default 30)");
}

void declareMetricsFlags(FlagDeclarer& declare, RawFlags& raw) {
  declare.section("Metrics (Prometheus)");
  declare
      .valued(flag_name::kMetrics, raw.metrics,
              "serve Prometheus metrics (workers, every rank's heartbeat age, progress and step time, restarts by "
              "cause, goodput) at http://ADDR:PORT/metrics: ADDR:PORT, or PORT alone for 127.0.0.1; port 0 picks a "
              "free one (printed). Default: off")
      ->each([&raw](const std::string&) { raw.metricsGiven = true; });
}

void declareRemoteFlags(FlagDeclarer& declare, RawFlags& raw) {
  declare.section("Many hosts from one shell (over ssh)");
  declare.valued("hosts", raw.hosts, "run on these hosts from here, over ssh: h1:4,h2:4 (HOST:SLOTS)", "-H");
  declare.valued("hostfile", raw.hostfile, "hosts from a file: 'host slots=N' or 'host:N' lines, # comments");
  declare.valued("num-nodes", raw.numNodes, "DeepSpeed's: the first N hosts of the host list");
  declare.valued("include", raw.include,
                 "only these hosts/slots (DeepSpeed's form): h1@h2:0,2; without hosts this node's GPUs: localhost:0,2",
                 "-i");
  declare.valued("exclude", raw.exclude, "all but these hosts/slots (DeepSpeed's form): h1@h2:0,2, or localhost:1",
                 "-e");
  declare.valued("ssh-port", raw.sshPort, "the hosts' ssh port", "-p");
  declare.valued("ssh-identity", raw.sshIdentity, "the private key ssh uses");
  declare.valued("remote-command", raw.remoteCommand,
                 "how to run a command on a host, with {host}: 'ssh -F cfg {host}', 'kubectl exec -i {host} --'");
  // -x has no PET_ variable: it is CLI11's own option.
  declare
      .inSection(declare.app().add_option(
          "-x,--export", raw.exports,
          "pass this variable (NAME or NAME=VALUE) to the workers, on one node too; repeatable"))
      ->allow_extra_args(false)  // one value per -x: what follows may be PROGRAM
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  declare.valued("env-file", raw.envFile, "KEY=VALUE lines passed to the workers (on every host)");
  declare.valued("network-interface", raw.networkInterface, "the driver's interface the hosts reach it on");
  declare.valued("remote-pltrun", raw.remotePltrun, "pltrun's path on the hosts (default: this binary's path)");
  declare.app()
      .add_flag(flag_name::longFlag(flag_name::kExitWithParent), raw.exitWithParent,
                "internal: stop when the parent process ends")
      ->group("");
}

}  // namespace

std::shared_ptr<const FlagVariables> declareFlags(CLI::App& app, RawFlags& raw) {
  auto variables = std::make_shared<FlagVariables>();
  FlagDeclarer declare(app, *variables);
  declareWorkerAndNodeFlags(declare, raw);
  declareOutputFlags(declare, raw);
  declareProgramFlags(declare, raw);
  declareHealthFlags(declare, raw);
  declareMetricsFlags(declare, raw);
  declareRemoteFlags(declare, raw);
  app.formatter(std::make_shared<VariablesInHelp>(variables));
  app.footer(
      "Exit status: 0 when every worker succeeded; otherwise the first failed worker's own\n"
      "  status (128+N if signal N killed it); 124 when ranks stalled (--stall-timeout);\n"
      "  125 when restarts made no progress (--max-no-progress-restarts);\n"
      "  2 for a bad flag or value; 127 when PROGRAM is\n"
      "  missing or not executable; 128+N when pltrun was stopped by signal N; 1 for any other\n"
      "  failure (a lost rendezvous, a worker that could not be started).\n"
      "Environment: PET_<FLAG> gives a flag's default (as torchrun); PLTRUN_SECRET_FILE the\n"
      "  shared secret; PLTRUN_CGROUP=off no job cgroup; PYTHON_EXEC the interpreter for .py;\n"
      "  TMPDIR the temporary run directory; CUDA_VISIBLE_DEVICES (or PLTRUN_FAKE_GPUS) the\n"
      "  GPUs; SLURM_* a Slurm step's nodes, node rank and job id; TORCHELASTIC_ENABLE_FILE_TIMER=1\n"
      "  serves torch's FileTimer watchdog at TORCHELASTIC_TIMER_FILE (or a FIFO pltrun makes).\n"
      "Site defaults: /etc/pltrun.toml (or $PLTRUN_CONFIG; PLTRUN_CONFIG= for none), long options\n"
      "  without dashes (max-restarts = 3); flags and PET_* variables win over it.\n"
      "Other launchers' words (docs/USAGE.md): mpirun's -np, -n, -N, -npernode, -H, -host, -hostfile,\n"
      "  -machinefile, -x, --oversubscribe, -bind-to none; horovodrun's -np, -H, -p, --start-timeout,\n"
      "  --verbose; DeepSpeed's --num_gpus, --num_nodes, -H FILE, -i, -e, --no_local_rank.\n"
      "Files: DIR/RUN_ID[.N]/ per run, DIR/latest, events.jsonl and failure.json (docs/EVENTS.md).\n"
      "A running elastic job's state: pltrun status --rdzv-endpoint HOST:PORT --rdzv-id ID\n"
      "  [--json] [--watch] (pltrun status --help).");
  return variables;
}

std::vector<std::pair<std::string, std::string>> applyFlagVariables(const FlagVariables& variables,
                                                                    const Environment& env) {
  std::vector<std::pair<std::string, std::string>> applied;
  for (const auto& [option, variable] : variables) {
    if (option->count() != 0) continue;  // the command line wins
    auto found = env.find(variable);
    if (found == env.end() || found->second.empty()) continue;  // CLI11 skips empty variables too
    option->add_result(found->second);
    option->run_callback();  // converts the text and sets the target, as parse() did for the others
    applied.emplace_back("--" + option->get_lnames().front(), variable + "=" + found->second);
  }
  return applied;
}

Error tracedToVariables(const Error& error, const std::vector<std::pair<std::string, std::string>>& applied) {
  for (const auto& [flag, setting] : applied) {
    if (namesOption(error.what(), flag))
      return Error(error.code(), std::string(error.what()) + " (from " + setting + ")");
  }
  return error;
}

}  // namespace pltrun
