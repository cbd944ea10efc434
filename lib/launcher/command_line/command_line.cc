#include "launcher/command_line/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "launcher/command_line/deepspeed_flags.h"
#include "launcher/command_line/flag_declarations.h"
#include "launcher/command_line/foreign_spellings.h"
#include "launcher/command_line/metrics_flag.h"
#include "launcher/command_line/node_flags.h"
#include "launcher/command_line/remote_flags.h"
#include "launcher/command_line/shell_completion.h"
#include "launcher/command_line/site_config.h"
#include "launcher/command_line/torchrun_flags.h"
#include "launcher/plan/preload_modules.h"
#include "launcher/plan/program_command.h"
#include "launcher/plan/stall_timeout.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"
#include "version/version.h"

namespace pltrun {
namespace {

constexpr size_t kLongestRunId = 128;

// "pltrun 0.1.0 (git 1a2b3c4d5e6f)": project()'s version and the build's commit.
std::string versionText() { return std::string("pltrun ") + buildVersion(); }

void applyProgram(const RawFlags& raw, const std::vector<std::string>& command, LaunchConfig& config) {
  if (command.empty()) {
    throw Error(ErrorCode::InvalidArgument, "PROGRAM is missing: usage is pltrun [options] PROGRAM [ARGS...]");
  }
  if (command.front().size() > 1 && command.front()[0] == '-') {
    throw Error(ErrorCode::InvalidArgument, "unknown option '" + command.front() + "' (see pltrun --help)");
  }
  config.program = command.front();
  config.programArgs.assign(command.begin() + 1, command.end());
  // torchrun: --run-path "takes precedence over --no-python"; with -m it is a contradiction.
  if (raw.module && (raw.noPython || raw.runPath)) {
    throw Error(ErrorCode::InvalidArgument,
                std::string("-m/--module and ") + (raw.runPath ? "--run-path" : "--no-python") +
                    " cannot be used together: one says PROGRAM is a module, the other a file");
  }
  config.programKind = raw.module     ? ProgramKind::Module
                       : raw.runPath  ? ProgramKind::Script
                       : raw.noPython ? ProgramKind::NoPython
                                      : ProgramKind::Auto;
  if (raw.preload.empty()) return;
  config.preload = parsePreloadModules(raw.preload);
  if (programRunsUnderPython(config)) return;
  // From the site file it is a default for Python programs: any other runs as without it.
  config.preload.clear();
  if (!raw.preloadFromSite) {
    throw Error(ErrorCode::InvalidArgument,
                "--preload needs a Python program (a .py file, -m MODULE or --run-path); '" + config.program +
                    "' is run directly");
  }
}

void applyOutputFlags(const RawFlags& raw, LaunchConfig& config) {
  if (!raw.logDir.empty()) config.logDir = raw.logDir;
  if (!raw.redirects.empty()) config.redirects = parseStreamSelection("--redirects", raw.redirects);
  if (!raw.tee.empty()) config.tee = parseStreamSelection("--tee", raw.tee);
  if (!raw.localRanksFilter.empty()) {
    config.localRanksFilter = parseLocalRanksFilter("--local-ranks-filter", raw.localRanksFilter);
  }
  config.prefixOutput = !raw.noPrefix;
  if (raw.quiet && raw.verbose) {
    throw Error(ErrorCode::InvalidArgument, "-q/--quiet and --verbose contradict each other; give one");
  }
  config.quiet = raw.quiet;
  config.verbose = raw.verbose;
}

// mpirun's and horovodrun's words that pltrun accepts where they cannot change anything,
// and horovodrun's --start-timeout, which is the nodes' time to meet.
void applyForeignLauncherFlags(const RawFlags& raw, LaunchConfig& config) {
  if (!raw.bindTo.empty() && raw.bindTo != "none") {
    throwInvalidFlag("--bind-to", raw.bindTo,
                     "pltrun binds no worker to cores unless asked: only none is accepted; to place workers near "
                     "their GPU use --numa-binding node");
  }
  if (!raw.startTimeout.empty()) config.rdzv.joinTimeout = parseSecondsFlag("--start-timeout", raw.startTimeout);
  config.localRankArgument = passesLocalRankArgument(raw);
}

// horovodrun's --start-timeout is the hosts' time to start and meet: a job of one node, with
// no driver and no rendezvous, has nothing to wait for, so the flag would do nothing unseen.
void warnStartTimeoutOnOneNode(const RawFlags& raw, LaunchConfig& config) {
  if (raw.startTimeout.empty() || !config.remote.hosts.empty() || config.rdzv.maxNodes > 1) return;
  config.notes.push_back({true, "--start-timeout " + raw.startTimeout +
                                    " is ignored: it is the time hosts have to start and meet, and this job runs on "
                                    "one node (it applies with --hosts/--hostfile or --nnodes above 1)"});
}

// Node health (issue 46): a timeout or interval of 0 would fail every check, or check
// without pause.
void applyHealthFlags(const RawFlags& raw, LaunchConfig& config) {
  config.healthCheck = raw.healthCheck;
  const auto positiveSeconds = [](const char* flag, const std::string& value) {
    const std::chrono::milliseconds seconds = parseSecondsFlag(flag, value);
    if (seconds.count() <= 0) throwInvalidFlag(flag, value, "expected seconds above 0");
    return seconds;
  };
  if (!raw.healthCheckTimeout.empty()) {
    config.healthCheckTimeout = positiveSeconds("--health-check-timeout", raw.healthCheckTimeout);
  }
  if (!raw.healthCheckInterval.empty()) {
    config.healthCheckInterval = positiveSeconds("--health-check-interval", raw.healthCheckInterval);
  }
}

void applySupervisionFlags(const RawFlags& raw, LaunchConfig& config) {
  if (!raw.maxRestarts.empty()) {
    config.maxRestarts = static_cast<int>(
        parseIntegerFlag("--max-restarts", raw.maxRestarts, 0, 1'000'000, "expected a non-negative integer"));
  }
  if (!raw.maxNoProgressRestarts.empty()) {
    config.maxNoProgressRestarts = static_cast<int>(parseIntegerFlag(
        "--max-no-progress-restarts", raw.maxNoProgressRestarts, 0, 1'000'000, "expected a non-negative integer"));
  }
  if (!raw.maxNodeBlames.empty()) {
    config.maxNodeBlames = static_cast<int>(
        parseIntegerFlag("--max-node-blames", raw.maxNodeBlames, 0, 1'000'000, "expected a non-negative integer"));
  }
  if (!raw.termTimeout.empty()) config.termTimeout = parseSecondsFlag("--term-timeout", raw.termTimeout);
  applyHealthFlags(raw, config);
  if (raw.metricsGiven) config.metrics = parseMetricsEndpoint("--metrics", raw.metrics);
  if (!raw.stallTimeout.empty()) config.stallTimeout = parseStallTimeout("--stall-timeout", raw.stallTimeout);
  if (!raw.monitorInterval.empty()) parseSecondsFlag("--monitor-interval", raw.monitorInterval);  // checked, unused
  // torch allows these three; workers are always separate processes here, as with spawn.
  if (!raw.startMethod.empty() && raw.startMethod != "spawn" && raw.startMethod != "fork" &&
      raw.startMethod != "forkserver") {
    throwInvalidFlag("--start-method", raw.startMethod, "expected spawn, fork or forkserver, as torchrun");
  }
  config.agentStore = !raw.noAgentStore;
}

// torchrun's watchdog: TORCHELASTIC_ENABLE_FILE_TIMER=1 (exactly "1", as torchrun reads
// it) serves the FileTimer at TORCHELASTIC_TIMER_FILE, or at a FIFO pltrun makes.
// torchrun's environment variables for the launcher itself: the FileTimer watchdog and the
// console's line prefix.
void applyTorchElasticVariables(const Environment& env, LaunchConfig& config) {
  auto enabled = env.find("TORCHELASTIC_ENABLE_FILE_TIMER");
  config.fileTimer = enabled != env.end() && enabled->second == "1";
  auto path = env.find("TORCHELASTIC_TIMER_FILE");
  if (config.fileTimer && path != env.end()) config.fileTimerPath = path->second;
  auto prefix = env.find("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE");
  if (prefix != env.end() && !prefix->second.empty()) config.linePrefixTemplate = prefix->second;
}

// The run id names a directory under --log-dir and the job's keys in the store: a safe
// alphabet and length only, so that it can never climb out of --log-dir or into another run.
void checkRunId(const std::string& runId) {
  const bool safeCharacters = std::all_of(runId.begin(), runId.end(), isNameCharacter);
  if (safeCharacters && runId.size() <= kLongestRunId && runId != "." && runId != "..") return;
  throwInvalidFlag("--rdzv-id", runId,
                   "expected at most " + std::to_string(kLongestRunId) +
                       " of the characters A-Z a-z 0-9 . _ - (and not . or ..): it names a directory under --log-dir");
}

// torchrun's parser (argparse) takes any unambiguous prefix of a long option: `--redirect=3`
// for --redirects, `--nproc 4` for --nproc-per-node. The option `name` ("--redirect") stands
// for, or none when no option starts with it; two or more are an error naming them.
const CLI::Option* optionByPrefix(const CLI::App& app, const std::string& name) {
  std::vector<const CLI::Option*> matches;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& longName : option->get_lnames()) {
      if (("--" + longName).rfind(name, 0) == 0 && std::find(matches.begin(), matches.end(), option) == matches.end()) {
        matches.push_back(option);
      }
    }
  }
  if (matches.size() > 1) {
    std::vector<std::string> named;
    for (const CLI::Option* option : matches) named.push_back("--" + option->get_lnames().front());
    throw Error(ErrorCode::InvalidArgument,
                "ambiguous option '" + name + "': it could be " + joinText(named, ", ") + " (see pltrun --help)");
  }
  return matches.empty() ? nullptr : matches.front();
}

// Before CLI11 reads pltrun's own options (never the program's, after PROGRAM): horovodrun's
// and mpirun's spellings ("-np N", -hostfile, ...) become pltrun's (foreign_spellings.h),
// and an abbreviated long option is spelled out as torchrun would read it.
void normalizeLauncherOptions(std::vector<std::string>& args, const CLI::App& app, const FileReader& readOwnFile,
                              std::vector<LaunchNote>& notes) {
  for (size_t at = 0; at < args.size(); ++at) {
    std::string& arg = args[at];
    if (arg == "--" || arg.size() < 2 || arg.front() != '-') return;                       // PROGRAM starts here
    if (auto hostfile = hostfileFromDashH(args, at, readOwnFile, notes)) arg = *hostfile;  // DeepSpeed's -H FILE
    if (auto ours = pltrunSpelling(arg, app)) arg = *ours;                                 // -np, -hostfile, -host, -n
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    const CLI::Option* option = app.get_option_no_throw(name);
    if (option == nullptr && name.rfind("--", 0) == 0 && name.size() > 2) {
      option = optionByPrefix(app, name);
      if (option == nullptr) throw unknownOption(name, app);
      arg = "--" + option->get_lnames().front() + arg.substr(name.size());
    }
    if (equals == std::string::npos && option != nullptr && takesValue(*option)) ++at;  // its value
  }
}

// torchrun 2.14's --print-completion: every long option of pltrun's, both spellings.
std::string completionFor(const CLI::App& app, const std::string& shell) {
  std::vector<std::string> longOptions;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // internal
    for (const std::string& name : option->get_lnames()) longOptions.push_back("--" + name);
  }
  return shellCompletionScript(shell, longOptions);
}

// -np N without hosts: N workers on this one node, as horovodrun -np N does on localhost.
void applyTotalOnOneNode(const RawFlags& raw, LaunchConfig& config) {
  const int total = parseTotalProcesses(raw.totalProcesses);
  if (!raw.nnodes.empty() && raw.nnodes != "1") {
    throw Error(ErrorCode::InvalidArgument,
                "-np counts workers on one node or over --hosts/--hostfile; with --nnodes "
                "give --nproc-per-node instead");
  }
  if (total > kMaxWorkersPerNode) {
    throwInvalidFlag("-np", raw.totalProcesses,
                     "on one node at most " + std::to_string(kMaxWorkersPerNode) + " workers");
  }
  if (config.nprocPerNode &&
      !(config.nprocPerNode->kind == WorkerCount::Kind::Fixed && config.nprocPerNode->count == total)) {
    throw Error(ErrorCode::InvalidArgument, "-np " + raw.totalProcesses + " and --nproc-per-node " + raw.nprocPerNode +
                                                " disagree; give one of them");
  }
  config.nprocPerNode = WorkerCount::fixed(total);
}

// --auto-select-gpus: refused here, before anything starts, where there is nothing to
// choose (a list of GPUs, --include/--exclude HOST:GPUS on any host); each node chooses
// at start, the driver's agents included.
void checkAutoSelectGpus(const RawFlags& raw, const LaunchConfig& config) {
  gpusToAutoSelect(config.nprocPerNode, config.devices);
  for (const HostSlots& host : config.remote.hosts) {
    if (!host.devices.empty()) {
      throw Error(ErrorCode::InvalidArgument, "--auto-select-gpus chooses free GPUs, but " +
                                                  std::string(raw.include.empty() ? "--exclude" : "--include") + " '" +
                                                  (raw.include.empty() ? raw.exclude : raw.include) + "' names host " +
                                                  host.host + "'s GPUs: nothing to choose; drop one of them");
    }
  }
}

// From the site file (auto-select-gpus = true) it is a default for the jobs that ask for
// GPUs by number (--devices N or -1, --nproc-per-node gpu): a job that names its GPUs, or
// asks for none, runs as it would without the file, never refused for it.
void applyAutoSelectGpus(const RawFlags& raw, LaunchConfig& config) {
  config.autoSelectGpus = raw.autoSelectGpus;
  if (!config.autoSelectGpus) return;
  if (raw.autoSelectGpusFromSite) {
    const bool countsGpus =
        config.devices ? config.devices->kind == DeviceSelection::Kind::All ||
                             (config.devices->kind == DeviceSelection::Kind::First && config.devices->count > 0)
                       : config.nprocPerNode && config.nprocPerNode->kind == WorkerCount::Kind::Gpu;
    const bool hostsNameGpus = std::any_of(config.remote.hosts.begin(), config.remote.hosts.end(),
                                           [](const HostSlots& host) { return !host.devices.empty(); });
    config.autoSelectGpus = countsGpus && !hostsNameGpus;
    return;
  }
  checkAutoSelectGpus(raw, config);
}

LaunchConfig buildConfig(RawFlags raw, const std::vector<std::string>& command, const Environment& env,
                         const FileReader& readFile, const FileReader& readOwnFile) {
  LaunchConfig config;
  applyProgram(raw, command, config);
  // Parsed here, once: the worker layout resolves them against the GPUs without text.
  if (!raw.nprocPerNode.empty()) config.nprocPerNode = parseWorkerCount(raw.nprocPerNode);
  if (!raw.totalProcesses.empty() && raw.hosts.empty() && raw.hostfile.empty()) applyTotalOnOneNode(raw, config);
  if (!raw.devices.empty()) config.devices = parseDeviceSelection(raw.devices);
  if (!raw.runIdAlias.empty()) raw.runId = raw.runIdAlias;
  if (raw.hosts.empty() && raw.hostfile.empty()) {
    applyDeepSpeedOnOneNode(raw, config);
    applySlurmDefaults(raw, config, env, readFile);
  }
  applyNodeFlags(raw, config, env);
  applyForeignLauncherFlags(raw, config);
  applyRemoteFlags(raw, config, readOwnFile);
  warnStartTimeoutOnOneNode(raw, config);
  applyAutoSelectGpus(raw, config);
  // The first node of a Slurm job hosts the store, whatever its name resolves to.
  if (config.slurmSummary && config.rdzv.nodeRankHint && !config.rdzv.isHost)
    config.rdzv.isHost = config.rdzv.nodeRankHint == 0;
  applySupervisionFlags(raw, config);
  applyTorchElasticVariables(env, config);
  applyTorchrun214Flags(raw, env, config);
  checkTorchrunOnlyFlags(raw);
  checkRunId(raw.runId);
  config.runId = raw.runId;
  if (!raw.role.empty()) config.role = raw.role;
  applyOutputFlags(raw, config);
  return config;
}

}  // namespace

std::variant<LaunchConfig, InformationRequest> parseCommandLine(int argc, const char* const* argv,
                                                                const Environment& env, const FileReader& readFile,
                                                                const FileProbe& exists,
                                                                const FileReader& readOwnFile) {
  // `pltrun --version` alone: CLI11 would answer the same before reading any variable or
  // file, but only after declaring every flag, which is most of the time it takes
  // (docs/PERFORMANCE.md, launch, --version).
  if (argc == 2 && std::string(argv[1]) == "--version") return InformationRequest{versionText() + "\n"};
  CLI::App app{"pltrun: start and supervise the workers of a distributed job.", "pltrun"};
  app.prefix_command();  // PROGRAM and everything after it belong to the program
  app.set_version_flag("--version", versionText());
  RawFlags raw;
  const std::shared_ptr<const FlagVariables> variables = declareFlags(app, raw);

  const FileReader& ownFile = readOwnFile ? readOwnFile : readFile;
  SiteSettings siteSettings;
  std::vector<LaunchNote> notes;
  std::vector<std::pair<std::string, std::string>> fromVariables;
  std::vector<std::string> args(argv + 1, argv + argc);
  normalizeLauncherOptions(args, app, ownFile, notes);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments in reverse order
  try {
    app.parse(args);
    fromVariables = applyFlagVariables(*variables, env);
    siteSettings = applySiteConfig(app, env, ownFile, exists);
    raw.autoSelectGpusFromSite = siteSettings.sets("--auto-select-gpus");
    raw.preloadFromSite = siteSettings.sets("--preload");
  } catch (const CLI::CallForHelp&) {
    return InformationRequest{app.help()};
  } catch (const CLI::CallForVersion&) {
    return InformationRequest{versionText() + "\n"};
  } catch (const CLI::ParseError& error) {
    throw Error(ErrorCode::InvalidArgument, std::string(error.what()) + " (see pltrun --help)");
  }
  if (!raw.printCompletion.empty()) return InformationRequest{completionFor(app, raw.printCompletion)};
  std::vector<std::string> command = app.remaining();
  if (!command.empty() && command.front() == "--") command.erase(command.begin());  // pltrun -- PROGRAM ...
  if (siteSettings.read) {
    notes.push_back({false, "read site config " + siteSettings.path + " (" +
                                countedNoun(static_cast<long long>(siteSettings.options.size()), "setting") +
                                " applied)"});
  }
  try {
    LaunchConfig config = buildConfig(raw, command, env, readFile, ownFile);
    config.notes.insert(config.notes.begin(), notes.begin(), notes.end());
    return config;
  } catch (const Error& error) {
    throw tracedToSiteConfig(tracedToVariables(error, fromVariables), siteSettings);
  }
}

}  // namespace pltrun
