// An agent whose rendezvous store is not up yet (its host's agent has not started) waits
// visibly and can be stopped: a line saying what it waits for and for how long, a line
// every 5 s, and SIGINT or SIGTERM end the wait at once with 128 + signal, though the
// event loop that handles signals during the job does not run yet.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "helpers/child_process.h"

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
