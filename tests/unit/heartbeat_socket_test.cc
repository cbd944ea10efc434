// HeartbeatSocket against a real second Unix user: the run's private directory is the first
// barrier; behind it, what another user manages to send is read and dropped, never a
// heartbeat (docs/SECURITY.md, "Stalled workers and stack samples").

#include "launcher/stall/heartbeat_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "helpers/other_user.h"
#include "helpers/temp_dir.h"

using pltrun::DrainedHeartbeats;
using pltrun::HeartbeatSocket;

namespace {

void sendFromHere(const std::string& path, const std::string& payload) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  const ssize_t sent =
      sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&address), sizeof address);
  close(fd);
  REQUIRE(sent == static_cast<ssize_t>(payload.size()));
}

}  // namespace

TEST_CASE("heartbeat socket: another user's datagrams are read and dropped, never a heartbeat",
          "[heartbeat_socket][other_user]") {
  if (!pltrun::test::canActAsOtherUsers()) {
    WARN("skipped: acting as another Unix user needs root");
    return;
  }
  const pltrun::test::OtherUser& other = pltrun::test::otherUser(1);
  pltrun::test::TempDir directory("pltrun-heartbeat");
  const std::string path = directory / "heartbeat";
  HeartbeatSocket socket(path);
  // Past the first barrier on purpose: the directory and the socket open to everyone, so
  // that only the credentials the kernel attaches tell the sender apart.
  REQUIRE(chmod(directory.path().c_str(), 0755) == 0);
  REQUIRE(chmod(path.c_str(), 0777) == 0);
  const std::string send =
      "/usr/bin/python3 -c \"import socket; socket.socket(socket.AF_UNIX, "
      "socket.SOCK_DGRAM).sendto(b'7', '" +
      path + "')\"";
  REQUIRE(pltrun::test::shellAs(other, send) == 0);
  const DrainedHeartbeats foreign = socket.drain(64);
  CHECK(foreign.datagrams == 1);  // it arrived, and was read
  CHECK_FALSE(foreign.beat);
  CHECK_FALSE(foreign.counter);

  sendFromHere(path, "8");  // this user's own still beats
  const DrainedHeartbeats own = socket.drain(64);
  CHECK(own.datagrams == 1);
  CHECK(own.beat);
  CHECK(own.counter == 8);
}
