// The driver's health check of every host (host_health.h, unhealthy_hosts.h): what it runs
// there, how it reads `pltrun health --json`'s answer and every way a host can fail to
// give one, and the failure.json of a job refused for unhealthy hosts.

#include "launcher/driver/host_health.h"

#include <signal.h>

#include <catch2/catch.hpp>

#include "launcher/driver/agent_command_line.h"
#include "launcher/driver/unhealthy_hosts.h"

using namespace pltrun;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

CapturedRun ended(int exitCode, const std::string& out, const std::string& err = "") {
  CapturedRun run;
  run.end = ProcessEnd{exitCode, 0};
  run.out = out;
  run.err = err;
  return run;
}

HostHealth verdict(const CapturedRun& run, bool overTransport = true) {
  return hostHealthFrom("h2", run, overTransport, 90s);
}

}  // namespace

TEST_CASE("host health: pltrun health's JSON line and exit status give the verdict", "[host_health]") {
  const std::string failed =
      R"({"healthy": false, "reason": "health-check: exit code 1: disk full", "checks": [{"name": "health-check", )"
      R"("verdict": "failed", "detail": "exit code 1: disk full"}]})";
  const HostHealth bad = verdict(ended(1, "Welcome to h2 (the shell's start-up files)\n" + failed + "\n"));
  CHECK_FALSE(bad.healthy);
  CHECK(bad.host == "h2");
  CHECK(bad.reason == "health-check: exit code 1: disk full");
  CHECK(bad.checks.at(0)["verdict"] == "failed");

  const HostHealth good = verdict(ended(0, R"({"healthy": true, "reason": "", "checks": []})"
                                           "\n"));
  CHECK(good.healthy);
  CHECK(good.reason.empty());

  // The two disagree: not healthy, whichever says so.
  const HostHealth mixed = verdict(ended(1, R"({"healthy": true, "reason": "", "checks": []})"));
  CHECK_FALSE(mixed.healthy);
  CHECK(mixed.reason == "pltrun health ended with exit code 1");
}

TEST_CASE("host health: a host where the check cannot run at all is unhealthy, with why", "[host_health]") {
  const HostHealth unreachable = verdict(ended(255, "", "ssh: connect to host h2 port 22: Connection refused\r\n"));
  CHECK_FALSE(unreachable.healthy);
  CHECK(unreachable.reason ==
        "could not reach it (exit status 255: ssh's or the remote command's own error): ssh: connect to host h2 "
        "port 22: Connection refused\r");
  // Here, without ssh, 255 is pltrun's own.
  CHECK_THAT(verdict(ended(255, "", "boom\n"), false).reason, Catch::StartsWith("pltrun health gave no verdict"));
  CHECK_THAT(verdict(ended(127, "", "sh: 1: /opt/pltrun: not found\n")).reason,
             Catch::Contains("exit status 127") && Catch::EndsWith(": sh: 1: /opt/pltrun: not found"));
  CHECK_THAT(verdict(ended(2, "", "pltrun: error: the following arguments ...\n")).reason,
             Catch::Contains("refused its command line"));
  CHECK(verdict(ended(0, "not json\n{\"healthy\": \"yes\"}\n")).reason ==
        "pltrun health gave no verdict (exit code 0)");

  CapturedRun late;
  late.timedOut = true;
  late.end = ProcessEnd{0, SIGKILL};
  CHECK(verdict(late).reason == "no answer from pltrun health within 90 s");
  CapturedRun unstarted;
  unstarted.startError = "execve: No such file or directory";
  CHECK(verdict(unstarted).reason == "the check could not be started here: execve: No such file or directory");
}

TEST_CASE("host health: the check runs pltrun health --json with the job's site check and its timeout",
          "[host_health]") {
  LaunchConfig config;
  CHECK(healthCommandArguments(config) == std::vector<std::string>{"health", "--json"});
  CHECK(hostCheckLimit(config) == 30s);
  config.healthCheck = "/site/check.sh --quick 'a b'";
  config.healthCheckTimeout = 2500ms;
  CHECK(healthCommandArguments(config) == std::vector<std::string>{"health", "--json", "--health-check",
                                                                   "/site/check.sh --quick 'a b'",
                                                                   "--health-check-timeout", "2.500"});
  CHECK(hostCheckLimit(config) == 32500ms);
  config.healthCheckInterval = 5s;  // an agent's, not the check's
  CHECK(healthCommandArguments(config).size() == 6);
  CHECK(healthCheckArguments(config) == std::vector<std::string>{"--health-check", "/site/check.sh --quick 'a b'",
                                                                 "--health-check-timeout", "2.500",
                                                                 "--health-check-interval", "5.000"});
}

TEST_CASE("host health: failure.json lists every unhealthy host as an excluded node", "[host_health]") {
  const std::vector<HostHealth> unhealthy = {{"h1", false, "gpu lost: GPU 1: fallen off the bus", json::array()},
                                             {"h3", false, "could not reach it", json::array()}};
  const json report = unhealthyHostsReport(unhealthy);
  CHECK(report["schema"] == 1);
  CHECK(report["root_cause"].is_null());
  CHECK(report["others"] == json::array());
  CHECK(report["excluded_nodes"] ==
        json::parse(R"([{"node": "h1", "kind": "unhealthy", "reason": "gpu lost: GPU 1: fallen off the bus"},
                        {"node": "h3", "kind": "unhealthy", "reason": "could not reach it"}])"));
}
