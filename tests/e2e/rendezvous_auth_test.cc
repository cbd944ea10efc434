// The rendezvous with a shared secret, attacked the way issue 11's review did on loopback:
// a client without the secret forges the end of a running job, or takes a node's slot, or
// squats on the endpoint's port before the hosting agent starts. Real agents, real workers
// (the test worker's `serve` mode), real sockets; the attacker is pltrun's own TCP client.

#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "e2e/elastic_job.h"
#include "helpers/child_process.h"
#include "helpers/secret_file_fixture.h"
#include "helpers/store_client_options.h"
#include "helpers/temp_dir.h"
#include "pltrun/error.h"
#include "pltrun/tcp_store.h"

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

// What an agent writes when the job has ended: the forgery the review used.
const std::string kForgedSuccess = R"({"reason":"succeeded","final":true})";

// Tries to end run `runId` through the store at `port` as the review did; true when the
// store let both writes through.
bool forgeSuccess(const TcpStoreOptions& options, const std::string& runId) {
  try {
    TcpStore attacker(options);
    attacker.compareSet("pltrun/rdzv/" + runId + "/r0/end", "", kForgedSuccess);
    attacker.compareSet("pltrun/rdzv/" + runId + "/closed", "", kForgedSuccess);
    return true;
  } catch (const Error&) {
    return false;
  }
}

bool running(const ChildProcess& process) { return !processGone(process.pid()); }

int workersAlive(const TempDir& dir) {
  int alive = 0;
  for (pid_t pid : recordedWorkerPids(dir)) alive += processGone(pid) ? 0 : 1;
  return alive;
}

}  // namespace

TEST_CASE("with a shared secret, a forged end of the job is refused and the workers keep running", "[elastic][auth]") {
  TempDir dir;
  WorkerSweeper sweeper(dir);
  SecretFile secret;
  ElasticJob job(dir, "1:2", "forged", {}, {testWorker(), "serve", dir.path()},
                 kConf + ",secret_file=" + secret.path());
  ChildProcess& agent = job.start();
  waitForRound(dir, 2, 0);

  // Without the secret, and with a wrong one: refused before any write.
  CHECK_FALSE(forgeSuccess(loopbackStoreOptions(job.port()), "forged"));
  CHECK_FALSE(forgeSuccess(loopbackStoreOptions(job.port(), "a guess of sixteen bytes or more", "forged"), "forged"));
  std::this_thread::sleep_for(1500ms);  // an agent a forgery ends is gone long before this
  CHECK(running(agent));
  CHECK(workersAlive(dir) == 2);

  // The same forgery with the secret does end the job: the keys and values are the ones
  // that matter, so the refusals above are the secret's doing.
  CHECK(forgeSuccess(loopbackStoreOptions(job.port(), secret.secret(), "forged"), "forged"));
  Finished end = agent.wait(kAgentExit);
  INFO(end.err);
  CHECK(end.status == 0);
  checkNoWorkerLeft(dir);
}

TEST_CASE("with a shared secret, a client without it cannot take a node's place", "[elastic][auth]") {
  TempDir dir;
  WorkerSweeper sweeper(dir);
  SecretFile secret;
  ElasticJob job(dir, "2", "injected", {}, {testWorker(), "serve", dir.path()},
                 kConf + ",secret_file=" + secret.path());
  job.start();
  // The review's client took slot 0 of round 0 with addr 0.0.0.0 and set the workers' port.
  bool admitted = true;
  try {
    TcpStore intruder(loopbackStoreOptions(job.port()));
    intruder.add("pltrun/rdzv/injected/r0/count", 1);
    intruder.set("pltrun/rdzv/injected/r0/master_port", "31337");
  } catch (const Error&) {
    admitted = false;
  }
  CHECK_FALSE(admitted);
  job.start();
  const Round round = waitForRound(dir, 4, 0);
  for (const auto& [rank, record] : round.byRank) {
    INFO("rank " << rank);
    CHECK(record.var("MASTER_ADDR") == "127.0.0.1");
    CHECK(record.var("MASTER_PORT") != "31337");
    CHECK(record.var("GROUP_WORLD_SIZE") == "2");  // the two real agents, nobody else
  }
  release(dir);
  std::vector<Finished> results = job.waitAll();
  INFO(describe(results));
  for (const Finished& result : results) CHECK(result.status == 0);
  checkNoWorkerLeft(dir);
}

TEST_CASE("an agent that should host the store refuses a squatter on the endpoint's port", "[elastic][auth]") {
  TempDir dir;
  SecretFile secret;
  SecretFile otherSecret("another job's shared secret");
  // A squatter without the secret (what any program on the port is), and a pltrun store
  // with another secret. The first already holds a job-ending value for the run: the
  // review's squatter set the agent's exit status to 7 that way.
  const bool withOtherSecret = GENERATE(false, true);
  std::vector<std::string> storeArgs = {PLTRUN_STORE_BINARY, "--host", "127.0.0.1", "--port", "0"};
  if (withOtherSecret) storeArgs.insert(storeArgs.end(), {"--secret-file", otherSecret.path()});
  ChildProcess squatter(storeArgs, {}, dir / "squatter.out");
  int port = 0;
  for (int attempt = 0; attempt < 200 && port == 0; ++attempt) {
    std::smatch match;
    const std::string out = readFile(dir / "squatter.out");
    if (std::regex_search(out, match, std::regex("listening on 127\\.0\\.0\\.1:(\\d+)"))) port = std::stoi(match[1]);
    if (port == 0) std::this_thread::sleep_for(50ms);
  }
  REQUIRE(port != 0);
  if (!withOtherSecret) {
    TcpStore(loopbackStoreOptions(port))
        .set("pltrun/rdzv/squat/closed", R"({"reason":"failed","status":7,"final":true})");
  }

  Finished agent = runPltrun({"--nnodes", "2", "--nproc-per-node", "1", "--rdzv-endpoint",
                              "127.0.0.1:" + std::to_string(port), "--rdzv-id", "squat", "--rdzv-conf",
                              "join_timeout=10,secret_file=" + secret.path(), testWorker(), "env", dir.path()});
  INFO("squatter " << (withOtherSecret ? "with another secret" : "without a secret") << ": " << agent.err);
  CHECK(agent.status == 1);  // a launcher failure, not the squatter's 7
  CHECK_THAT(agent.err, Catch::Contains("prove our shared secret"));
  CHECK_THAT(agent.err, Catch::Contains("another process holds port " + std::to_string(port)));
  CHECK_FALSE(std::filesystem::exists(dir / "env_0.json"));  // no worker started
  squatter.signal(SIGTERM);
  squatter.wait(10s);
}

TEST_CASE("a secret file others can read, or a missing one, exits 2 with one line saying what to do",
          "[elastic][auth][bad-input]") {
  TempDir dir;
  SecretFile readable("a secret readable by everyone", 0644);
  SecretFile tooShort("short");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {readable.path(), "chmod 600"},
      {dir / "missing", "cannot open"},
      {tooShort.path(), "at least 16"},
  };
  for (const auto& [path, advice] : cases) {
    for (const std::vector<std::string>& how :
         {std::vector<std::string>{"--rdzv-conf", "secret_file=" + path}, std::vector<std::string>{}}) {
      std::vector<std::string> args = {"--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:0"};
      args.insert(args.end(), how.begin(), how.end());
      args.push_back("true");
      Finished run = runPltrun(
          args, how.empty() ? std::vector<std::string>{"PLTRUN_SECRET_FILE=" + path} : std::vector<std::string>{});
      INFO(path << (how.empty() ? " via PLTRUN_SECRET_FILE" : " via --rdzv-conf") << " -> " << run.err);
      CHECK(run.status == 2);
      CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
      CHECK(run.err.rfind("pltrun: error: secret_file: ", 0) == 0);
      CHECK_THAT(run.err, Catch::Contains(advice));
    }
  }
}
