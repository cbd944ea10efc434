// One command, many hosts, over a real OpenSSH server that the test starts on two loopback
// addresses (127.0.0.1 and 127.0.0.2 act as two hosts; sshd gives each session a fresh
// environment, as on another machine). The driver is the real pltrun; so are the remote
// agents it starts over ssh.

#include <dirent.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/sshd_fixture.h"
#include "helpers/store_client_options.h"
#include "helpers/temp_dir.h"
#include "helpers/worker_env_file.h"
#include "pltrun/error.h"
#include "pltrun/tcp_store.h"

using namespace pltrun::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// Pids of the processes whose command line contains `text` (the test's unique run id).
std::vector<pid_t> processesMentioning(const std::string& text) {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = readdir(proc)) {
    const pid_t pid = std::atoi(entry->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::ifstream file(std::string("/proc/") + entry->d_name + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (cmdline.find(text) != std::string::npos && !processGone(pid)) found.push_back(pid);
  }
  closedir(proc);
  return found;
}

bool noneLeftMentioning(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!processesMentioning(text).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

// The ssh client the driver started for `host`.
pid_t sshClientFor(pid_t driver, const std::string& host) {
  for (pid_t pid : processesMentioning(host)) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    int parent = 0;
    char state = 0;
    std::istringstream(line.substr(close + 2)) >> state >> parent;
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    comm >> name;
    if (parent == driver && name == "ssh") return pid;
  }
  return -1;
}

struct Hosts {
  SshServer server;
  std::vector<std::string> driverArgs(const std::string& runId, const std::vector<std::string>& extra,
                                      const std::vector<std::string>& hostFlags = {"--hosts",
                                                                                   "127.0.0.1:2,127.0.0.2:2"}) const {
    std::vector<std::string> args = hostFlags;
    args.insert(args.end(), {"--remote-command", "ssh -F " + server.clientConfig() + " {host}", "--rdzv-id", runId,
                             "--term-timeout", "5"});
    args.insert(args.end(), extra.begin(), extra.end());
    return pltrunCommand(args);
  }
};

#define SKIP_WITHOUT_SSHD()          \
  std::string why;                   \
  if (!SshServer::available(&why)) { \
    WARN("skipped: " << why);        \
    return;                          \
  }

}  // namespace

TEST_CASE("many hosts (--hosts): 2 hosts x 2 workers over ssh, with the environment the job needs", "[remote][e2e]") {
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  TempDir directory;
  {
    std::ofstream envFile(directory / "job.env");
    envFile << "# passed to every remote worker\nPLTRUN_TEST_FROM_FILE=from the file\n";
  }
  std::vector<std::string> argv = hosts.driverArgs(
      "remote-env",
      {"-x", "PLTRUN_TEST_EXPORTED", "--env-file", directory / "job.env", testWorker(), "env", directory.path()});
  ChildProcess driver(
      argv, {"NCCL_DEBUG=WARN", "PLTRUN_TEST_EXPORTED=yes it's exported", "PLTRUN_TEST_INHERITED=stays here"});
  Finished end = driver.wait(90s);
  INFO(end.err);
  REQUIRE(end.status == 0);
  CHECK_THAT(end.err, Catch::Contains("[127.0.0.1] pltrun: round 0: node rank 0 of 2 nodes"));
  CHECK_THAT(end.err, Catch::Contains("[127.0.0.2] pltrun: round 0: node rank 1 of 2 nodes"));
  CHECK_THAT(end.err, Catch::Contains("all 2 hosts finished"));
  std::set<std::string> masterPorts;
  for (int rank = 0; rank < 4; ++rank) {
    json env = workerEnvironment(directory, rank);
    CHECK(env["WORLD_SIZE"] == "4");
    CHECK(env["GROUP_RANK"] == std::to_string(rank / 2));
    CHECK(env["TORCHELASTIC_RUN_ID"] == "remote-env");
    CHECK(env["MASTER_ADDR"] == "127.0.0.1");  // node rank 0's host: its agent hosts the workers' store
    masterPorts.insert(env["MASTER_PORT"].get<std::string>());
    CHECK(env["NCCL_DEBUG"] == "WARN");                         // a forwarded prefix
    CHECK(env["PLTRUN_TEST_EXPORTED"] == "yes it's exported");  // -x, quoting intact
    CHECK(env["PLTRUN_TEST_FROM_FILE"] == "from the file");     // --env-file
    CHECK_FALSE(env.contains("PLTRUN_TEST_INHERITED"));         // not forwarded: the session's own env
  }
  CHECK(masterPorts.size() == 1);  // one workers' store for the round, on every host
  CHECK(noneLeftMentioning("remote-env", 10s));
}

TEST_CASE("many hosts (--hostfile): a failing remote worker gives its exit status and report on the driver",
          "[remote][e2e]") {
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  TempDir directory;
  {
    std::ofstream hostfile(directory / "hostfile");
    hostfile << "# two 'hosts' on loopback\n127.0.0.1 slots=2\n\n127.0.0.2:2  # the second\n";
  }
  ChildProcess driver(
      hosts.driverArgs("remote-fail", {testWorker(), "exit", "5", "3"}, {"--hostfile", directory / "hostfile"}));
  Finished end = driver.wait(90s);
  INFO(end.err);
  CHECK(end.status == 5);
  CHECK_THAT(end.err, Catch::Contains("[127.0.0.2] pltrun: worker failure (root cause"));
  CHECK_THAT(end.err, Catch::Contains("rank 3 (local rank 1)"));
  CHECK(noneLeftMentioning("remote-fail", 10s));
}

TEST_CASE("many hosts (--hostfile): a PBS node file, one line per slot, gives each host the sum of its lines",
          "[remote][e2e]") {
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  TempDir directory;
  {
    // As $PBS_NODEFILE (and Open MPI's one-slot-per-line files) are written.
    std::ofstream hostfile(directory / "nodefile");
    hostfile << "127.0.0.1\n127.0.0.2\n127.0.0.1\n127.0.0.2\n127.0.0.1\n";
  }
  ChildProcess driver(
      hosts.driverArgs("remote-pbs", {testWorker(), "env", directory.path()}, {"--hostfile", directory / "nodefile"}));
  Finished end = driver.wait(90s);
  INFO(end.err);
  REQUIRE(end.status == 0);
  for (int rank = 0; rank < 5; ++rank) {
    json env = workerEnvironment(directory, rank);
    CHECK(env["WORLD_SIZE"] == "5");
    CHECK(env["LOCAL_WORLD_SIZE"] == (rank < 3 ? "3" : "2"));  // 127.0.0.1: 3 lines, 127.0.0.2: 2
  }
  CHECK(noneLeftMentioning("remote-pbs", 10s));
}

TEST_CASE("many hosts (--remote-command): a kubectl exec that runs its arguments without a shell starts every agent",
          "[remote][e2e]") {
  TempDir directory;
  // Behaves as `kubectl exec -i POD -- CMD ARGS...` does: CMD runs with ARGS as they are,
  // with no shell in between (the pod here is this machine).
  const std::string kubectl = directory / "kubectl";
  {
    std::ofstream script(kubectl);
    script << "#!/bin/sh\n[ \"$1\" = exec ] || exit 2\nshift\n"
              "while [ \"$#\" -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n";
  }
  std::filesystem::permissions(kubectl, std::filesystem::perms::owner_all);
  ChildProcess driver(pltrunCommand({"--hosts", "127.0.0.1:1,127.0.0.2:1", "--remote-command",
                                     "'" + kubectl + "' exec -i {host} --", "--rdzv-id", "remote-kubectl", "-x",
                                     "PLTRUN_TEST_EXPORTED", testWorker(), "env", directory.path()}),
                      {"PLTRUN_TEST_EXPORTED=it's $HOME; `id`"});
  Finished end = driver.wait(90s);
  INFO(end.err);
  REQUIRE(end.status == 0);
  for (int rank = 0; rank < 2; ++rank) {
    json env = workerEnvironment(directory, rank);
    CHECK(env["WORLD_SIZE"] == "2");
    CHECK(env["PLTRUN_TEST_EXPORTED"] == "it's $HOME; `id`");
  }
  CHECK(noneLeftMentioning("remote-kubectl", 10s));
}

TEST_CASE("many hosts: a host whose agent never starts is named in the waiting lines and the join timeout",
          "[remote][e2e]") {
  TempDir directory;
  // A remote command that starts the agent on 127.0.0.1 only (both hosts' health checks
  // run): 127.0.0.2 stays silent, as a host whose pltrun hangs before joining would (perl
  // keeps the agent's arguments in its command line, so that noneLeftMentioning sees it if
  // it were left behind).
  const std::string launcher = directory / "only-first-host";
  {
    std::ofstream script(launcher);
    script << "#!/bin/sh\nhost=$1\nshift\ncase \"$*\" in *health*--json*) exec \"$@\";; esac\n"
              "[ \"$host\" = 127.0.0.1 ] || exec perl -e 'sleep 60' \"$@\"\nexec \"$@\"\n";
  }
  std::filesystem::permissions(launcher, std::filesystem::perms::owner_all);
  ChildProcess driver(pltrunCommand({"--hosts", "127.0.0.1:1,127.0.0.2:1", "--remote-command",
                                     "'" + launcher + "' {host}", "--rdzv-id", "remote-missing", "--rdzv-conf",
                                     "join_timeout=4", "--term-timeout", "2", testWorker(), "exit", "0"}));
  Finished end = driver.wait(60s);
  INFO(end.err);
  CHECK(end.status != 0);
  CHECK_THAT(end.err, Catch::Contains("[127.0.0.1] pltrun: waiting for nodes: 1/2 joined (1 missing to start), "
                                      "missing: 127.0.0.2; join timeout in"));
  CHECK_THAT(end.err, Catch::Contains("1 of at least 2 nodes joined round 0 within 4 s (1 missing; not joined: "
                                      "127.0.0.2)"));
  CHECK(noneLeftMentioning("remote-missing", 10s));
}

TEST_CASE("many hosts: forwarded variables reach the workers but no process's command line", "[remote][e2e]") {
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  TempDir directory;
  const std::string secret = "tok-" + std::to_string(getpid()) + "-never-in-argv";
  {
    std::ofstream envFile(directory / "job.env");
    envFile << "PLTRUN_TEST_FILE_SECRET=file-" << secret << "\n";
  }
  const std::string release = directory / "release";
  ChildProcess driver(
      hosts.driverArgs("remote-secret-env",
                       {"-x", "HF_TOKEN", "--env-file", directory / "job.env", "/bin/sh", "-c",
                        "printf '%s %s' \"$HF_TOKEN\" \"$PLTRUN_TEST_FILE_SECRET\" > " + directory.path() +
                            "/seen_$RANK; while [ ! -e " + release + " ]; do sleep 0.05; done"}),
      {"HF_TOKEN=hf-" + secret});
  for (int rank = 0; rank < 4; ++rank) REQUIRE(waitForFile(directory / ("seen_" + std::to_string(rank)), 60s));
  // Every process of the job runs now (ssh, the remote shells, the agents, the workers).
  const std::vector<pid_t> showing = processesMentioning(secret);
  std::ofstream(release).close();
  Finished end = driver.wait(90s);
  INFO(end.err);
  CHECK(showing.empty());
  CHECK(end.status == 0);
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(readFile(directory / ("seen_" + std::to_string(rank))) == "hf-" + secret + " file-" + secret);
  }
  CHECK(noneLeftMentioning("remote-secret-env", 10s));
}

TEST_CASE("many hosts: -np N as horovodrun takes it, N workers on this node or the first N slots of the hosts",
          "[remote][e2e]") {
  TempDir directory;
  Finished local = runPltrun({"-np", "3", "/bin/sh", "-c", "echo \"$RANK/$WORLD_SIZE\""});
  INFO(local.err);
  REQUIRE(local.status == 0);
  for (const char* line : {"0/3", "1/3", "2/3"}) CHECK(local.out.find(line) != std::string::npos);
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  ChildProcess driver(hosts.driverArgs("remote-np", {"-np", "3", testWorker(), "env", directory.path()}));
  Finished end = driver.wait(90s);
  INFO(end.err);
  REQUIRE(end.status == 0);
  for (int rank = 0; rank < 3; ++rank) {
    json env = workerEnvironment(directory, rank);
    CHECK(env["WORLD_SIZE"] == "3");
    CHECK(env["LOCAL_WORLD_SIZE"] == (rank < 2 ? "2" : "1"));  // 127.0.0.1: both slots, 127.0.0.2: one
  }
  CHECK_FALSE(std::filesystem::exists(directory / "env_3.json"));
  CHECK(noneLeftMentioning("remote-np", 10s));
}

TEST_CASE("many hosts (--hosts): Ctrl-C on the driver leaves no process on any host", "[remote][e2e]") {
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  TempDir directory;
  ChildProcess driver(hosts.driverArgs("remote-int", {testWorker(), "signals", directory.path()}));
  std::vector<pid_t> workers;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string ready = directory / ("ready_" + std::to_string(rank));
    REQUIRE(waitForFile(ready, 60s));
    std::this_thread::sleep_for(20ms);
    workers.push_back(std::stoi(readFile(ready)));
  }
  driver.signal(SIGINT);
  Finished end = driver.wait(60s);
  INFO(end.err);
  CHECK(end.status == 128 + SIGINT);
  CHECK(waitUntilGone(workers, 10s).empty());
  CHECK(noneLeftMentioning("remote-int", 10s));
}

TEST_CASE("many hosts (--hosts): a dropped ssh connection stops that host's agent and workers", "[remote][e2e]") {
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  TempDir directory;
  ChildProcess driver(hosts.driverArgs("remote-drop", {testWorker(), "signals", directory.path()}));
  std::vector<pid_t> secondHostWorkers;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string ready = directory / ("ready_" + std::to_string(rank));
    REQUIRE(waitForFile(ready, 60s));
    std::this_thread::sleep_for(20ms);
    if (rank >= 2) secondHostWorkers.push_back(std::stoi(readFile(ready)));
  }
  const pid_t client = sshClientFor(driver.pid(), "127.0.0.2");
  REQUIRE(client > 0);
  kill(client, SIGKILL);  // the connection drops; the remote agent's parent (sshd) ends
  CHECK(waitUntilGone(secondHostWorkers, 10s).empty());
  Finished end = driver.wait(60s);
  INFO(end.err);
  CHECK(end.status != 0);
  CHECK(noneLeftMentioning("remote-drop", 10s));
}

TEST_CASE("many hosts: the driver's rendezvous admits only its agents, whose secret is in no argv",
          "[remote][e2e][auth]") {
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  TempDir directory;
  ChildProcess driver(hosts.driverArgs("remote-auth", {testWorker(), "signals", directory.path()}));
  const std::optional<std::string> started = driver.waitForStderr("rendezvous store on", 30s);
  REQUIRE(started);
  std::smatch match;
  REQUIRE(std::regex_search(*started, match, std::regex("rendezvous store on 127\\.0\\.0\\.1:(\\d+)")));
  const int port = std::stoi(match[1]);
  for (int rank = 0; rank < 4; ++rank) REQUIRE(waitForFile(directory / ("ready_" + std::to_string(rank)), 60s));

  // Every agent authenticated (the job formed); a client without the job's secret, which
  // the driver made up and handed over ssh's stdin, cannot even read.
  CHECK_THROWS_AS(pltrun::TcpStore(loopbackStoreOptions(port)).numKeys(), pltrun::Error);
  CHECK_THROWS_AS(pltrun::TcpStore(loopbackStoreOptions(port, "not the secret, but long enough", "remote-auth")),
                  pltrun::Error);

  // The agents' command lines say where the secret comes from, never the secret (the
  // driver's are 64 hex digits).
  const std::vector<pid_t> agents = processesMentioning("secret_file=-");
  CHECK(agents.size() >= 2);
  for (pid_t pid : processesMentioning("remote-auth")) {
    const std::string cmdline = readFile("/proc/" + std::to_string(pid) + "/cmdline");
    INFO(cmdline);
    CHECK_FALSE(std::regex_search(cmdline, std::regex("[0-9a-f]{64}")));
  }
  driver.signal(SIGINT);
  Finished end = driver.wait(60s);
  INFO(end.err);
  CHECK(end.status == 128 + SIGINT);
  CHECK(noneLeftMentioning("remote-auth", 10s));
}

TEST_CASE("many hosts: --devices, --nproc-per-node and --include slots reach every host's agent",
          "[remote][e2e][devices]") {
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  TempDir directory;
  // Each worker's GROUP_RANK (its host), LOCAL_WORLD_SIZE and CUDA_VISIBLE_DEVICES.
  auto placements = [&](int workers) {
    std::multiset<std::string> found;
    for (int rank = 0; rank < workers; ++rank) {
      json env = workerEnvironment(directory, rank);
      CHECK(env["WORLD_SIZE"] == std::to_string(workers));
      found.insert(env["GROUP_RANK"].get<std::string>() + " " + env["LOCAL_WORLD_SIZE"].get<std::string>() + " " +
                   env.value("CUDA_VISIBLE_DEVICES", "(unset)"));
    }
    return found;
  };
  auto run = [&](const std::string& runId, const std::vector<std::string>& flags,
                 const std::vector<std::string>& hostFlags) {
    std::vector<std::string> extra = {"-x", "PLTRUN_FAKE_GPUS=4"};  // every host has 4 GPUs
    extra.insert(extra.end(), flags.begin(), flags.end());
    extra.insert(extra.end(), {testWorker(), "env", directory.path()});
    ChildProcess driver(hosts.driverArgs(runId, extra, hostFlags));
    Finished end = driver.wait(90s);
    INFO(end.err);
    REQUIRE(end.status == 0);
    CHECK(noneLeftMentioning(runId, 10s));
  };
  const std::vector<std::string> bareHosts = {"--hosts", "127.0.0.1,127.0.0.2"};
  SECTION("--devices as a list") {
    run("remote-devices", {"--devices", "[1, 3]"}, bareHosts);
    CHECK(placements(4) == std::multiset<std::string>{"0 2 1,3", "0 2 1,3", "1 2 1,3", "1 2 1,3"});
  }
  SECTION("--nproc-per-node gpu") {
    run("remote-nproc", {"--nproc-per-node", "gpu"}, bareHosts);
    CHECK(placements(8).count("1 4 (unset)") == 4);
  }
  SECTION("--include: one slot of a host is that GPU, not a count of GPUs") {
    run("remote-include", {"--include", "127.0.0.1:2@127.0.0.2:1,3"}, {"--hosts", "127.0.0.1:4,127.0.0.2:4"});
    CHECK(placements(3) == std::multiset<std::string>{"0 1 2", "1 2 1,3", "1 2 1,3"});
  }
}

// Issue 46: the driver runs `pltrun health --json` on every host before it starts the job,
// and names every unhealthy host at once. These need `pltrun health` (the health branch).

namespace {

// A --remote-command that runs its arguments as kubectl exec does, as if on host $1: with
// PLTRUN_TEST_HOST set to it; a host listed in $UNREACHABLE fails as ssh does when it cannot
// connect (exit status 255, its message on stderr), and its agent never starts.
std::string perHostLauncher(const TempDir& directory) {
  const std::string launcher = directory / "per-host";
  std::ofstream script(launcher);
  script << "#!/bin/sh\nhost=$1\nshift\n"
            "case \" $UNREACHABLE \" in *\" $host \"*)\n"
            "  echo \"ssh: connect to host $host port 22: Connection refused\" >&2; exit 255;;\nesac\n"
            "PLTRUN_TEST_HOST=$host exec \"$@\"\n";
  script.close();
  std::filesystem::permissions(launcher, std::filesystem::perms::owner_all);
  return launcher;
}

std::vector<json> eventsNamed(const std::string& path, const std::string& name) {
  std::vector<json> found;
  std::ifstream file(path);
  for (std::string line; std::getline(file, line);) {
    const json event = json::parse(line);
    if (event["event"] == name) found.push_back(event);
  }
  return found;
}

}  // namespace

TEST_CASE("many hosts: every unhealthy host is named at once, one that cannot be reached too, and nothing starts",
          "[remote][e2e][health]") {
  TempDir directory;
  const std::string launcher = perHostLauncher(directory);
  // The site's check fails on 127.0.0.3 only; 127.0.0.2 cannot be reached at all.
  const std::string check = "touch " + directory.path() +
                            "/checked_$PLTRUN_TEST_HOST; if [ \"$PLTRUN_TEST_HOST\" = 127.0.0.3 ]; then "
                            "echo 'scratch disk /data is full'; exit 1; fi";
  ChildProcess driver(
      pltrunCommand({"--hosts", "127.0.0.1:1,127.0.0.2:1,127.0.0.3:1", "--remote-command", "'" + launcher + "' {host}",
                     "--rdzv-id", "remote-unhealthy", "--log-dir", directory / "logs", "--health-check", check,
                     testWorker(), "env", directory.path()}),
      {"UNREACHABLE=127.0.0.2"});
  Finished end = driver.wait(60s);
  INFO(end.err);
  CHECK(end.status == 1);
  CHECK_THAT(end.err, Catch::Contains("the job was not started: 2 of 3 hosts failed the health check:"));
  CHECK_THAT(end.err, Catch::Contains("pltrun:   127.0.0.2: could not reach it (exit status 255: ssh's or the "
                                      "remote command's own error): ssh: connect to host 127.0.0.2 port 22: "
                                      "Connection refused"));
  CHECK(std::regex_search(end.err, std::regex("pltrun:   127\\.0\\.0\\.3: [^\n]*scratch disk /data is full")));
  CHECK_THAT(end.err, !Catch::Contains("pltrun:   127.0.0.1:"));
  // The check ran on both hosts it reached; no agent and no worker started anywhere.
  CHECK(std::filesystem::exists(directory / "checked_127.0.0.1"));
  CHECK(std::filesystem::exists(directory / "checked_127.0.0.3"));
  CHECK_THAT(end.err, !Catch::Contains("rendezvous store on"));
  CHECK_FALSE(std::filesystem::exists(directory / "env_0.json"));

  const std::string run = directory.path() + "/logs/remote-unhealthy";
  const json failure = json::parse(readFile(run + "/failure.json"));
  CHECK(failure["root_cause"].is_null());
  REQUIRE(failure["excluded_nodes"].size() == 2);
  CHECK(failure["excluded_nodes"][0]["node"] == "127.0.0.2");
  CHECK(failure["excluded_nodes"][0]["kind"] == "unhealthy");
  CHECK_THAT(failure["excluded_nodes"][0]["reason"].get<std::string>(), Catch::Contains("Connection refused"));
  CHECK(failure["excluded_nodes"][1]["node"] == "127.0.0.3");
  CHECK_THAT(failure["excluded_nodes"][1]["reason"].get<std::string>(), Catch::Contains("/data is full"));
  CHECK_THAT(end.err, Catch::Contains("report: " + run + "/failure.json"));
  const std::vector<json> unhealthy = eventsNamed(run + "/events.jsonl", "node_unhealthy");
  REQUIRE(unhealthy.size() == 2);
  CHECK(unhealthy[1]["node"] == "127.0.0.3");
  CHECK(unhealthy[1]["checks"].is_array());
  CHECK(eventsNamed(run + "/events.jsonl", "job_finished").at(0)["status"] == 1);
  CHECK(noneLeftMentioning("remote-unhealthy", 10s));
}

TEST_CASE(
    "many hosts over ssh: a host whose --health-check fails keeps the job from starting, and healthy hosts run it",
    "[remote][e2e][health]") {
  SKIP_WITHOUT_SSHD();
  Hosts hosts;
  TempDir directory;
  // sshd tells the session which address it was reached at: the host, as far as the check knows.
  const std::string check = "set -- $SSH_CONNECTION; touch " + directory.path() +
                            "/checked_$3; [ \"$3\" != 127.0.0.2 ] || { echo 'NIC mlx5_1 down' >&2; exit 3; }";
  ChildProcess refused(
      hosts.driverArgs("remote-health-ssh", {"--health-check", check, testWorker(), "env", directory.path()}));
  Finished end = refused.wait(90s);
  INFO(end.err);
  CHECK(end.status == 1);
  CHECK_THAT(end.err, Catch::Contains("1 of 2 hosts failed the health check"));
  CHECK(std::regex_search(end.err, std::regex("pltrun:   127\\.0\\.0\\.2: [^\n]*NIC mlx5_1 down")));
  CHECK(std::filesystem::exists(directory / "checked_127.0.0.1"));
  CHECK(std::filesystem::exists(directory / "checked_127.0.0.2"));
  CHECK_FALSE(std::filesystem::exists(directory / "env_0.json"));
  CHECK(noneLeftMentioning("remote-health-ssh", 10s));

  // The same check passing everywhere: the job runs, and its agents run the check too.
  ChildProcess passed(hosts.driverArgs(
      "remote-health-ok", {"--health-check", "set -- $SSH_CONNECTION; echo x >> " + directory.path() + "/ok_$3",
                           testWorker(), "env", directory.path()}));
  Finished ok = passed.wait(90s);
  INFO(ok.err);
  REQUIRE(ok.status == 0);
  CHECK_THAT(ok.err, Catch::Contains("health check passed on all 2 hosts"));
  for (int rank = 0; rank < 4; ++rank) CHECK(workerEnvironment(directory, rank)["WORLD_SIZE"] == "4");
  // Once by the driver's check, at least once by the agent before it joined.
  CHECK(readFile(directory / "ok_127.0.0.2").size() >= 4);
  CHECK(noneLeftMentioning("remote-health-ok", 10s));
}

TEST_CASE("many hosts: a GPU reported lost on every host (the fake NVML's health, forwarded with -x) refuses them all",
          "[remote][e2e][health]") {
  TempDir directory;
  const std::string launcher = perHostLauncher(directory);
  ChildProcess driver(
      pltrunCommand({"--hosts", "127.0.0.1:1,127.0.0.2:1", "--remote-command", "'" + launcher + "' {host}", "--rdzv-id",
                     "remote-gpu-lost", "-x", "PLTRUN_FAKE_GPUS=2", "-x", "PLTRUN_FAKE_GPU_HEALTH=1=lost", testWorker(),
                     "env", directory.path()}));
  Finished end = driver.wait(60s);
  INFO(end.err);
  CHECK(end.status == 1);
  CHECK_THAT(end.err, Catch::Contains("2 of 2 hosts failed the health check"));
  for (const char* host : {"127.0.0.1", "127.0.0.2"}) {
    CHECK(std::regex_search(end.err, std::regex(std::string("pltrun:   ") + host + ": [^\n]*gpu lost: GPU 1")));
  }
  CHECK_FALSE(std::filesystem::exists(directory / "env_0.json"));
  CHECK(noneLeftMentioning("remote-gpu-lost", 10s));
}
