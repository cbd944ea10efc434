// pltrun::heartbeat and pltrun_heartbeat against a real receiving socket, bound as pltrun
// binds it: the payload that arrives, nothing outside pltrun, and no blocking when nobody
// reads.

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "helpers/scoped_env.h"
#include "pltrun/heartbeat.h"
#include "pltrun/pltrun.h"
#include "tests/helpers/bound_datagram_socket.h"

using pltrun::test::ScopedEnv;

namespace {

// pltrun's end of a worker's heartbeat socket (non-blocking, as pltrun's is).
class Receiver : public pltrun::test::BoundDatagramSocket {
 public:
  Receiver() : BoundDatagramSocket("pltrun-heartbeat-test", SOCK_NONBLOCK) {}

  /// The next datagram's payload, waiting up to `timeout`; none when nothing came.
  std::optional<std::string> receive(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    pollfd ready{fd(), POLLIN, 0};
    if (poll(&ready, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
    char data[64];
    const ssize_t size = recv(fd(), data, sizeof data, MSG_DONTWAIT);
    if (size < 0) return std::nullopt;
    return std::string(data, static_cast<size_t>(size));
  }
};

}  // namespace

TEST_CASE("client heartbeat: the step arrives as its decimal, a negative step as 'beat'", "[client_heartbeat]") {
  Receiver receiver;
  ScopedEnv heartbeat("PLTRUN_HEARTBEAT", receiver.path());
  pltrun::heartbeat(7);
  CHECK(receiver.receive() == "7");
  pltrun::heartbeat(-1);
  CHECK(receiver.receive() == "beat");
  pltrun::heartbeat();
  CHECK(receiver.receive() == "beat");
  pltrun::heartbeat(0);
  CHECK(receiver.receive() == "0");
  pltrun::heartbeat(9223372036854775807LL);
  CHECK(receiver.receive() == "9223372036854775807");
  pltrun::heartbeat(-9223372036854775807LL - 1);
  CHECK(receiver.receive() == "beat");
}

TEST_CASE("client heartbeat: the C API sends the same", "[client_heartbeat]") {
  Receiver receiver;
  ScopedEnv heartbeat("PLTRUN_HEARTBEAT", receiver.path());
  pltrun_heartbeat(42);
  CHECK(receiver.receive() == "42");
  pltrun_heartbeat(-5);
  CHECK(receiver.receive() == "beat");
}

TEST_CASE("client heartbeat: outside pltrun (PLTRUN_HEARTBEAT unset or empty) nothing is sent", "[client_heartbeat]") {
  Receiver receiver;
  {
    ScopedEnv unset("PLTRUN_HEARTBEAT", std::nullopt);
    pltrun::heartbeat(7);
    pltrun_heartbeat(8);
  }
  {
    ScopedEnv empty("PLTRUN_HEARTBEAT", std::string());
    pltrun::heartbeat(9);
  }
  CHECK_FALSE(receiver.receive(std::chrono::milliseconds(100)));
}

TEST_CASE("client heartbeat: a socket nobody binds, a missing directory or a too-long path is ignored",
          "[client_heartbeat]") {
  std::string path;
  {
    Receiver gone;
    path = gone.path();
  }
  for (const std::string& target : {path, std::string("/nonexistent-pltrun-dir/beat.sock"), std::string(200, 'x')}) {
    ScopedEnv heartbeat("PLTRUN_HEARTBEAT", target);
    pltrun::heartbeat(1);
    pltrun_heartbeat(2);
  }
  // A directory or a regular file is no socket either.
  ScopedEnv heartbeat("PLTRUN_HEARTBEAT", "/tmp");
  pltrun::heartbeat(3);
  SUCCEED("no call threw, crashed or blocked");
}

TEST_CASE("client heartbeat: with the receiver's queue full, 1000 calls return at once", "[client_heartbeat]") {
  Receiver receiver;  // never read until the end
  ScopedEnv heartbeat("PLTRUN_HEARTBEAT", receiver.path());
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < 1000; ++step) pltrun::heartbeat(step);
  for (int step = 0; step < 1000; ++step) pltrun_heartbeat(step);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  // A blocking send would wait forever on the 11th datagram (net.unix.max_dgram_qlen is 10 by
  // default); 2000 failed sends take about a millisecond.
  CHECK(elapsed < std::chrono::seconds(2));
  // The queue is indeed full: a send of our own is refused too.
  const int probe = socket(AF_UNIX, SOCK_DGRAM, 0);
  REQUIRE(probe >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strcpy(address.sun_path, receiver.path().c_str());
  const ssize_t sent = sendto(probe, "x", 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&address), sizeof address);
  const int error = errno;
  close(probe);
  CHECK(sent == -1);
  CHECK(error == EAGAIN);
  // What did arrive is the first steps, in order.
  CHECK(receiver.receive() == "0");
  CHECK(receiver.receive() == "1");
}

TEST_CASE("client heartbeat: a child made by fork() sends on a socket of its own", "[client_heartbeat]") {
  Receiver receiver;
  ScopedEnv heartbeat("PLTRUN_HEARTBEAT", receiver.path());
  pltrun::heartbeat(1);  // the parent's socket is open before the fork
  REQUIRE(receiver.receive() == "1");
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    pltrun::heartbeat(2);
    pltrun::heartbeat(3);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(receiver.receive() == "2");
  CHECK(receiver.receive() == "3");
  pltrun::heartbeat(4);  // the parent's own socket still works
  CHECK(receiver.receive() == "4");
}
