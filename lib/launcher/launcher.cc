#include "launcher/launcher.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <optional>
#include <vector>

#include "launcher/agent/elastic_agent.h"
#include "launcher/command_line/process_inputs.h"
#include "launcher/command_line/torchrun_flags.h"
#include "launcher/driver/remote_launch.h"
#include "launcher/net/host_identity.h"
#include "launcher/placement/node_placement.h"
#include "launcher/plan/exported_variables.h"
#include "launcher/static_job/static_job.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

// mpirun's -x and --env-file on one node: the workers' environment, and what pltrun reads
// about them (the GPUs, PYTHON_EXEC), include them.
Environment withExportedVariables(const Environment& inherited, const RemoteLaunchSettings& settings) {
  Environment environment = inherited;
  if (auto read =
          addExportedVariables(inherited, settings.exports, settings.envFile, readOwnFileFromDisk, environment)) {
    spdlog::info("{}", *read);
  }
  return environment;
}

// The lines a step before the mode leaves for the log, in their order.
void logNotes(const std::vector<LaunchNote>& notes) {
  for (const LaunchNote& note : notes) {
    if (note.warning) {
      spdlog::warn("{}", note.text);
    } else {
      spdlog::info("{}", note.text);
    }
  }
}

int runOnThisNode(const LaunchConfig& config, const Environment& inherited) {
  const ProgramCommand command = resolveProgramCommand(
      config, pythonInterpreter(inherited), environmentValue(inherited, "PATH").value_or(""), fileAccessOnDisk);
  // Held until the job ends: with --auto-select-gpus, the locks of the GPUs chosen.
  const NodePlacement placement = placeWorkersOnThisNode(config, inherited);
  logNotes(placement.notes);
  const WorkerLayout& layout = placement.layout;
  // torchrun's default id is "none" on every node; pltrun keeps a random one where it can
  // (one node: each run's logs apart), but the nodes of a static job must agree without
  // being told: "none", as torchrun's.
  const std::string runId = !config.runId.empty() ? config.runId : config.nnodes > 1 ? "none" : randomHexId();
  const bool elastic = (config.rdzv.backend == RendezvousBackend::C10d && config.rdzv.maxNodes > 1) ||
                       config.rdzv.backend == RendezvousBackend::Etcd;
  if (elastic) {
    // torchrun's default id is "none": agents started without --rdzv-id still meet.
    return runElasticAgent(
        ResolvedJob{config, inherited, command, layout, config.runId.empty() ? "none" : config.runId});
  }
  return runStaticJob(ResolvedJob{config, inherited, command, layout, runId});
}

}  // namespace

int runLauncher(const LaunchConfig& config) {
  if (config.exitWithParent) {
    // A remote agent: sshd's session process is the parent; when the connection drops it
    // ends, and SIGTERM stops this agent like any stop signal (workers included).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) throw Error(ErrorCode::Network, "the connection that started this agent is gone already");
  }
  if (config.slurmSummary) spdlog::info("{}", *config.slurmSummary);
  logNotes(config.notes);
  const Environment inherited = currentEnvironment();
  if (const std::string notice = healthCheckPortNotice(inherited); !notice.empty()) spdlog::info("{}", notice);
  if (!config.remote.hosts.empty()) return runDriver(config, inherited);
  return runOnThisNode(config, withExportedVariables(inherited, config.remote));
}

}  // namespace pltrun
