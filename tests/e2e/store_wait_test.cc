// Waits that say what they wait for and end on a signal (issue 29): an agent whose
// rendezvous store is not up yet (its host's agent has not started), a driver whose
// agents have not started, and a node at the exit barrier: a line saying what it waits for and for how long, a line
// every 5 s, and SIGINT or SIGTERM end the wait at once with 128 + signal. Something listening on the endpoint that is
// not a store is named as such.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "e2e/elastic_job.h"
#include "helpers/child_process.h"
#include "helpers/loopback_listener.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

// A loopback port with nothing listening, held (bound, never listened on) for the test.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
  }
  ~RefusingPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace

TEST_CASE("an agent waiting for its store says so every 5 s and stops at once on a signal", "[elastic][wait]") {
  const int stop = GENERATE(SIGINT, SIGTERM);
  RefusingPort nothing;
  TempDir dir;
  ChildProcess agent(pltrunCommand({"--nnodes", "1:2", "--rdzv-endpoint", "127.0.0.1:" + std::to_string(nothing.port()),
                                    "--rdzv-conf", "is_host=false,join_timeout=60", "/bin/true"}),
                     {"TMPDIR=" + dir.path()});
  REQUIRE(agent.waitForStderr("waiting up to", 20s));
  REQUIRE(agent.waitForStderr("still waiting for the store at 127.0.0.1:" + std::to_string(nothing.port()) + " after ",
                              20s));  // 5 s, or 6: the first retry past each 5 s
  const auto sent = std::chrono::steady_clock::now();
  agent.signal(stop);
  Finished end = agent.wait(10s);
  const auto took = std::chrono::steady_clock::now() - sent;
  INFO(end.err);
  CHECK(end.status == 128 + stop);
  CHECK(took < 3s);  // the retries' pause is at most a second
  CHECK(end.err.find("stopped by signal " + std::to_string(stop) + " while waiting for the store at") !=
        std::string::npos);
}

TEST_CASE("something on the endpoint's port that is not a store is named as such, at once", "[elastic][wait]") {
  const bool answers = GENERATE(false, true);  // silent after accepting; an HTTP server's answer
  LoopbackListener notAStore;                  // the kernel accepts into its backlog
  std::thread server;
  if (answers) {
    server = std::thread([&notAStore] {
      const int connection = accept(notAStore.fd(), nullptr, nullptr);
      if (connection < 0) return;
      const std::string reply = "HTTP/1.1 400 Bad Request\r\n\r\n";
      (void)!write(connection, reply.data(), reply.size());
      close(connection);
    });
  }
  TempDir dir;
  const std::string endpoint = "127.0.0.1:" + std::to_string(notAStore.port());
  Finished end = runPltrun(
      {"--nnodes", "1:2", "--rdzv-endpoint", endpoint, "--rdzv-conf", "is_host=false,join_timeout=60", "/bin/true"},
      {"TMPDIR=" + dir.path()});
  if (server.joinable()) server.join();
  INFO(end.err);
  CHECK(end.status == 1);
  CHECK(end.err.find(endpoint + " answered but is not a TCPStore") != std::string::npos);
  CHECK(end.err.find("--rdzv-endpoint") != std::string::npos);
}

TEST_CASE("a driver whose agents do not start says what it waits for every 5 s and stops at once on SIGINT",
          "[remote][wait]") {
  TempDir dir;
  // An agent that never starts: the "remote command" sleeps instead of running pltrun (it
  // runs the health check the driver starts first).
  ChildProcess driver(
      pltrunCommand({"--hosts", "localhost:1", "--remote-command",
                     "sh -c 'case \"$*\" in *health*--json*) exec \"$@\";; esac; sleep 60' {host}", "/bin/true"}),
      {"TMPDIR=" + dir.path()});
  REQUIRE(driver.waitForStderr(
      "waiting up to 600.0 s (join_timeout) for 1 agent to start (one agent per host: localhost)", 20s));
  REQUIRE(driver.waitForStderr("still waiting for the agents after 5.0 s: 0 of 1 joined", 20s));
  const auto sent = std::chrono::steady_clock::now();
  driver.signal(SIGINT);
  Finished end = driver.wait(10s);
  INFO(end.err);
  CHECK(end.status == 130);
  CHECK(std::chrono::steady_clock::now() - sent < 1s);
}

TEST_CASE("a node waiting at the exit barrier says so every 5 s and stops at once on SIGINT", "[elastic][wait]") {
  TempDir dir;
  // Node rank 0's workers end at once; the other node's run for a minute.
  ElasticJob job(dir, "2", "barrier", {}, {"/bin/sh", "-c", "[ \"$GROUP_RANK\" = 0 ] || sleep 60"});
  ChildProcess& first = job.start();
  job.start();
  REQUIRE(first.waitForStderr("waiting for the other nodes as long as their workers run", 30s));
  REQUIRE(first.waitForStderr("waiting for the other nodes: 1 of 2 have finished", 15s));
  const auto sent = std::chrono::steady_clock::now();
  first.signal(SIGINT);
  Finished end = first.wait(10s);
  INFO(end.err);
  CHECK(end.status == 130);
  CHECK(std::chrono::steady_clock::now() - sent < 1s);
  // The job was stopped: the other node stops its workers too and ends as the first did.
  CHECK(job.agent(1).wait(30s).status == 130);
}
