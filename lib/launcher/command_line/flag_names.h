#pragma once
// The long names of the flags one pltrun writes on another's command line: the driver
// starts every host's agent with them (driver/agent_command_line.h). flag_declarations.cc
// declares these flags by the same constants, so the writer cannot spell a flag the parser
// does not know. Dashed, without the leading "--" (the parser also takes '_' for '-').

#include <string>

namespace pltrun::flag_name {

// The rendezvous and the job.
inline constexpr char kExitWithParent[] = "exit-with-parent";
inline constexpr char kNnodes[] = "nnodes";
inline constexpr char kNodeRank[] = "node-rank";
inline constexpr char kRdzvBackend[] = "rdzv-backend";
inline constexpr char kRdzvEndpoint[] = "rdzv-endpoint";
inline constexpr char kRdzvId[] = "rdzv-id";
inline constexpr char kRdzvConf[] = "rdzv-conf";
inline constexpr char kMaxRestarts[] = "max-restarts";
inline constexpr char kMaxNoProgressRestarts[] = "max-no-progress-restarts";
inline constexpr char kMaxNodeBlames[] = "max-node-blames";
inline constexpr char kTermTimeout[] = "term-timeout";
inline constexpr char kStallTimeout[] = "stall-timeout";
inline constexpr char kRole[] = "role";
// Node health (issue 46): for the agents, and for `pltrun health` on every host.
inline constexpr char kHealthCheck[] = "health-check";
inline constexpr char kHealthCheckTimeout[] = "health-check-timeout";
inline constexpr char kHealthCheckInterval[] = "health-check-interval";
// Prometheus's scrape endpoint (issue 47): every agent serves its own node's metrics.
inline constexpr char kMetrics[] = "metrics";
// The workers.
inline constexpr char kDevices[] = "devices";
inline constexpr char kAutoSelectGpus[] = "auto-select-gpus";
inline constexpr char kNprocPerNode[] = "nproc-per-node";
// Output and the program.
inline constexpr char kLogDir[] = "log-dir";
inline constexpr char kNoPrefix[] = "no-prefix";
inline constexpr char kQuiet[] = "quiet";
inline constexpr char kVerbose[] = "verbose";
inline constexpr char kPassLocalRank[] = "pass-local-rank";
inline constexpr char kNoAgentStore[] = "no-agent-store";
inline constexpr char kModule[] = "module";
inline constexpr char kPreload[] = "preload";
inline constexpr char kNoPython[] = "no-python";
inline constexpr char kRunPath[] = "run-path";

/// `name` as it is written on a command line: "--nnodes".
inline std::string longFlag(const char* name) { return std::string("--") + name; }

}  // namespace pltrun::flag_name
