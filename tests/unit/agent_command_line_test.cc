// The driver writes each agent's command line (agentArguments); the agent reads it with
// the real parser (parseCommandLine). Every flag written must come back as the driver's
// value, tricky ones included: nothing else checks that the writer and the parser agree.

#include "launcher/driver/agent_command_line.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <variant>
#include <vector>

#include "launcher/command_line/command_line.h"
#include "launcher/command_line/rendezvous_flags.h"

using namespace pltrun;

namespace {

// The agent's own parse: no files, no PET_* variables, no site config.
LaunchConfig parsedByAgent(const std::vector<std::string>& arguments) {
  std::vector<const char*> argv{"pltrun"};
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  const auto noFiles = [](const std::string& path) -> std::string {
    throw FileReadError(FileReadError::Reason::Missing, path + ": no files in this test");
  };
  auto parsed = parseCommandLine(static_cast<int>(argv.size()), argv.data(), {{"PLTRUN_CONFIG", ""}}, noFiles);
  REQUIRE(std::holds_alternative<LaunchConfig>(parsed));
  return std::get<LaunchConfig>(parsed);
}

// A driver's job with a value that is easy to misread in every field agentArguments writes.
LaunchConfig trickyJob() {
  LaunchConfig config;
  config.remote.hosts = {{"gpu-01", 4, {}}, {"fe80::1%eth0", 0, {}}, {"node.example.org", 8, {1, 3}}};
  config.maxRestarts = 7;
  config.termTimeout = std::chrono::milliseconds(2500);
  config.role = "trainer role, with=sign and 'quotes'";
  config.stallTimeout = StallTimeout{false, std::chrono::milliseconds(90500)};
  config.rdzv.joinTimeout = std::chrono::milliseconds(1234);
  config.rdzv.lastCallTimeout = std::chrono::milliseconds(1);
  config.rdzv.closeTimeout = std::chrono::milliseconds(45000);
  config.rdzv.keepAliveInterval = std::chrono::milliseconds(750);
  config.rdzv.keepAliveMaxAttempt = 9;
  config.rdzv.readTimeout = std::chrono::milliseconds(120001);
  config.rdzv.secretFile = "/secrets/my job=1/\"quoted\" 'and' spaced.key";
  config.nprocPerNode = WorkerCount::fixed(3);
  config.logDir = "/logs/a b,c=d/\"e\"";
  config.prefixOutput = false;
  config.quiet = true;
  config.localRankArgument = true;
  config.agentStore = false;
  config.programKind = ProgramKind::Module;
  config.preload = {"torch", "numpy.random"};
  config.metrics = Endpoint{"::1", 0};
  config.program = "my.module";
  config.programArgs = {"--lr=0.1", "two words", "--", "-x", "it's \"quoted\"", ""};
  return config;
}

// Every field agentArguments writes, as the agent on host `index` must read it.
void checkAgentReads(const LaunchConfig& driver, size_t index, const Endpoint& endpoint) {
  const HostSlots& host = driver.remote.hosts[index];
  INFO("host " << host.host);
  const LaunchConfig agent = parsedByAgent(agentArguments(driver, index, endpointText(endpoint), "run-7.a_b"));
  CHECK(agent.exitWithParent);
  CHECK(agent.rdzv.backend == RendezvousBackend::C10d);
  CHECK(agent.rdzv.minNodes == static_cast<int>(driver.remote.hosts.size()));
  CHECK(agent.rdzv.maxNodes == static_cast<int>(driver.remote.hosts.size()));
  CHECK(agent.rdzv.nodeRankHint == static_cast<int>(index));
  CHECK(agent.rdzv.endpointHost == endpoint.host);
  CHECK(agent.rdzv.endpointPort == endpoint.port);
  CHECK(agent.runId == "run-7.a_b");
  CHECK(agent.maxRestarts == driver.maxRestarts);
  CHECK(agent.termTimeout == driver.termTimeout);
  CHECK(agent.role == driver.role);
  CHECK(agent.preload == driver.preload);
  CHECK(agent.metrics == driver.metrics);
  CHECK(agent.stallTimeout.has_value() == driver.stallTimeout.has_value());
  if (agent.stallTimeout && driver.stallTimeout) {
    CHECK(agent.stallTimeout->automatic == driver.stallTimeout->automatic);
    CHECK(agent.stallTimeout->fixed == driver.stallTimeout->fixed);
  }
  // --rdzv-conf: never the host; the driver's times; the secret's file or "-" (stdin).
  CHECK(agent.rdzv.isHost == false);
  CHECK(agent.rdzv.secretFile == (driver.rdzv.secretFile.empty() ? "-" : driver.rdzv.secretFile));
  CHECK(agent.rdzv.joinTimeout == driver.rdzv.joinTimeout);
  CHECK(agent.rdzv.lastCallTimeout == driver.rdzv.lastCallTimeout);
  CHECK(agent.rdzv.closeTimeout == driver.rdzv.closeTimeout);
  CHECK(agent.rdzv.keepAliveInterval == driver.rdzv.keepAliveInterval);
  CHECK(agent.rdzv.keepAliveMaxAttempt == driver.rdzv.keepAliveMaxAttempt);
  CHECK(agent.rdzv.readTimeout == driver.rdzv.readTimeout);
  CHECK(agent.rdzv.nodeName == host.host);
  std::vector<std::string> names;
  for (const HostSlots& each : driver.remote.hosts) names.push_back(each.host);
  CHECK(agent.rdzv.expectedHosts == names);
  // Workers: the host's --include GPUs, else its slots, else the job's --nproc-per-node or --devices.
  if (!host.devices.empty()) {
    CHECK(agent.devices == listedDevices(host.devices));
  } else if (host.slots > 0) {
    CHECK(agent.nprocPerNode == WorkerCount::fixed(host.slots));
  } else {
    CHECK(agent.nprocPerNode == driver.nprocPerNode);
    CHECK(agent.devices == driver.devices);
  }
  CHECK(agent.autoSelectGpus == driver.autoSelectGpus);  // each agent chooses on its own host
  CHECK(agent.logDir == driver.logDir);
  CHECK(agent.prefixOutput == driver.prefixOutput);
  CHECK(agent.quiet == driver.quiet);
  CHECK(agent.verbose == driver.verbose);
  CHECK(agent.localRankArgument == driver.localRankArgument);
  CHECK(agent.agentStore == driver.agentStore);
  CHECK(agent.programKind == driver.programKind);
  CHECK(agent.program == driver.program);
  CHECK(agent.programArgs == driver.programArgs);
}

}  // namespace

TEST_CASE("every flag of an agent's command line reads back as the driver wrote it", "[agent_command_line]") {
  const LaunchConfig job = trickyJob();
  for (size_t index = 0; index < job.remote.hosts.size(); ++index) {
    checkAgentReads(job, index, Endpoint{"2001:db8::7", 41234});
    checkAgentReads(job, index, Endpoint{"10.0.0.1", 29400});
  }
}

TEST_CASE("the agent reads back the defaults and the other choices of each flag", "[agent_command_line]") {
  LaunchConfig job;  // defaults: no stall timeout, no log dir, a prefix, the secret on stdin
  job.remote.hosts = {{"a", 0, {}}, {"b", 0, {}}};
  job.program = "train.py";
  checkAgentReads(job, 1, Endpoint{"driver.example.org", 1});
  job.metrics = Endpoint{"0.0.0.0", 9400};
  checkAgentReads(job, 1, Endpoint{"::1", 5});
  job.devices = listedDevices({2});  // one listed GPU, written "2,"
  job.verbose = true;
  job.stallTimeout = StallTimeout{true, {}};
  for (const ProgramKind kind : {ProgramKind::Auto, ProgramKind::NoPython, ProgramKind::Script}) {
    job.programKind = kind;
    checkAgentReads(job, 0, Endpoint{"::1", 5});
  }
  job.devices.reset();
  for (const WorkerCount count : {WorkerCount::fixed(1), WorkerCount{WorkerCount::Kind::Gpu, 0}}) {
    job.nprocPerNode = count;
    checkAgentReads(job, 0, Endpoint{"::1", 5});
  }
  // --auto-select-gpus: every agent chooses its host's free GPUs, by a count or all of them.
  job.autoSelectGpus = true;
  checkAgentReads(job, 1, Endpoint{"::1", 5});
  job.nprocPerNode.reset();
  for (const char* devices : {"2", "-1"}) {
    job.devices = parseDeviceSelection(devices);
    checkAgentReads(job, 0, Endpoint{"::1", 5});
  }
  job.remote.hosts[1].slots = 4;  // the host's slots: its worker count, on free GPUs
  checkAgentReads(job, 1, Endpoint{"::1", 5});
}

TEST_CASE("the agents' rendezvous settings are written as before the split", "[agent_command_line]") {
  LaunchConfig job;
  job.remote.hosts = {{"h1", 2, {}}, {"h2", 2, {}}};
  job.program = "p";
  const std::vector<std::string> args = agentArguments(job, 1, "10.0.0.1:29400", "r");
  CHECK(args == std::vector<std::string>{"--exit-with-parent",
                                         "--nnodes",
                                         "2",
                                         "--node-rank",
                                         "1",
                                         "--rdzv-backend",
                                         "c10d",
                                         "--rdzv-endpoint",
                                         "10.0.0.1:29400",
                                         "--rdzv-id",
                                         "r",
                                         "--max-restarts",
                                         "0",
                                         "--max-no-progress-restarts",
                                         "3",
                                         "--term-timeout",
                                         "30.000",
                                         "--role",
                                         "default",
                                         "--rdzv-conf",
                                         "is_host=0,secret_file=-,join_timeout=600.000,last_call_timeout=30.000,"
                                         "close_timeout=30.000,keep_alive_interval=5.000,keep_alive_max_attempt=3,"
                                         "read_timeout=60.000,node_name=h2,expected_hosts=h1,h2",
                                         "--nproc-per-node",
                                         "2",
                                         "--",
                                         "p"});
}

// Needs the health flags in the agent's parser (issue 46's health branch declares them).
TEST_CASE("the agent reads back the job's health flags, and none are written for the defaults",
          "[agent_command_line][health]") {
  LaunchConfig job;
  job.remote.hosts = {{"a", 0, {}}, {"b", 0, {}}};
  job.program = "p";
  const std::vector<std::string> plain = agentArguments(job, 0, "10.0.0.1:29400", "r");
  CHECK(std::find(plain.begin(), plain.end(), "--health-check") == plain.end());
  job.healthCheck = "/site/check.sh --gpus 'all of them'; echo \"done\"";
  job.healthCheckTimeout = std::chrono::milliseconds(12500);
  job.healthCheckInterval = std::chrono::milliseconds(7000);
  const LaunchConfig agent = parsedByAgent(agentArguments(job, 1, "10.0.0.1:29400", "r"));
  CHECK(agent.healthCheck == job.healthCheck);
  CHECK(agent.healthCheckTimeout == job.healthCheckTimeout);
  CHECK(agent.healthCheckInterval == job.healthCheckInterval);
}
