// HeartbeatReader: heartbeats are read in batches whose window adapts to how full the
// sockets' queues get, and none is lost between a read that found a socket empty and the
// next watch. Real sockets in a temporary directory, a real event loop and clock.

#include "launcher/stall/heartbeat_reader.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "helpers/temp_dir.h"
#include "launcher/process/process_runtime.h"

using namespace std::chrono_literals;
using pltrun::HeartbeatReader;
using pltrun::HeartbeatSocket;
using pltrun::kLongestReadWindow;
using pltrun::kShortestReadWindow;
using pltrun::nextReadWindow;
using pltrun::test::TempDir;

namespace {

// What the worker side does: one datagram to the socket at `path`, without waiting. False
// when the socket's queue is full (the datagram is dropped, as a non-blocking sender's is).
bool trySendBeat(const std::string& path, const std::string& payload) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const ssize_t sent =
      sendto(fd, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&address), sizeof address);
  const int error = errno;
  close(fd);
  if (sent < 0 && error == EAGAIN) return false;
  REQUIRE(sent == static_cast<ssize_t>(payload.size()));
  return true;
}

void sendBeat(const std::string& path, const std::string& payload) { REQUIRE(trySendBeat(path, payload)); }

struct Beat {
  size_t socket;
  std::optional<long long> counter;
};

}  // namespace

TEST_CASE("heartbeat reader: the window halves while a queue fills past half, doubles while all stay under a quarter",
          "[heartbeat_reader]") {
  CHECK(nextReadWindow(8ms, 6, 10) == 4ms);  // over half of 10
  CHECK(nextReadWindow(8ms, 10, 10) == 4ms);
  CHECK(nextReadWindow(1ms, 11, 10) == kShortestReadWindow);  // never below 1 ms
  CHECK(nextReadWindow(4ms, 2, 10) == 8ms);                   // under a quarter
  CHECK(nextReadWindow(4ms, 0, 10) == 8ms);
  CHECK(nextReadWindow(kLongestReadWindow, 0, 10) == kLongestReadWindow);  // never above the longest
  CHECK(nextReadWindow(4ms, 4, 10) == 4ms);                                // between: kept
  CHECK(nextReadWindow(4ms, 5, 10) == 4ms);
  CHECK(nextReadWindow(4ms, 100, 512) == 8ms);  // a system with a longer queue allows longer windows
}

TEST_CASE("heartbeat reader: datagrams queued together are one beat with the last counter", "[heartbeat_reader]") {
  TempDir directory("pltrun-beats");
  boost::asio::io_context context;
  HeartbeatReader reader(context, pltrun::realProcessRuntime().timers.makeTimer(context), 2);
  const std::string first = directory / "0.sock";
  const std::string second = directory / "1.sock";
  reader.bind(0, first);
  reader.bind(1, second);
  std::vector<Beat> beats;
  reader.start([&](size_t socket, std::optional<long long> counter) { beats.push_back({socket, counter}); });

  for (const char* payload : {"1", "2", "alive", "3", "garbage"}) sendBeat(first, payload);
  context.run_for(2 * kLongestReadWindow);
  REQUIRE(beats.size() == 1);
  CHECK(beats[0].socket == 0);
  CHECK(beats[0].counter == 3);  // the last number among them; the words are beats without one

  // Found empty at a window's end, the socket is waited on again: later beats still arrive,
  // on either socket.
  sendBeat(second, "7");
  context.run_for(2 * kLongestReadWindow);
  sendBeat(first, "4");
  context.run_for(2 * kLongestReadWindow);
  REQUIRE(beats.size() == 3);
  CHECK(beats[1].socket == 1);
  CHECK(beats[1].counter == 7);
  CHECK(beats[2].socket == 0);
  CHECK(beats[2].counter == 4);
}

TEST_CASE("heartbeat reader: a worker beating steadily is read in batches, not once per datagram",
          "[heartbeat_reader]") {
  TempDir directory("pltrun-beats");
  boost::asio::io_context context;
  HeartbeatReader reader(context, pltrun::realProcessRuntime().timers.makeTimer(context), 1);
  const std::string path = directory / "0.sock";
  reader.bind(0, path);
  int reads = 0;
  std::optional<long long> last;
  reader.start([&](size_t, std::optional<long long> counter) {
    ++reads;
    last = counter;
  });
  // 200 beats, one every 0.5 ms, with the event loop running between them.
  const auto start = std::chrono::steady_clock::now();
  for (int step = 1; step < 200; ++step) {
    trySendBeat(path, std::to_string(step));  // on a busy machine the queue may fill: dropped
    context.run_until(start + step * 500us);
  }
  while (!trySendBeat(path, "200")) context.run_for(1ms);  // the last one must arrive
  context.run_for(2 * kLongestReadWindow);
  CHECK(last == 200);
  CHECK(reads < 100);  // one read per datagram would be 200
  CHECK(reader.window() >= kShortestReadWindow);
}

TEST_CASE("heartbeat socket: a read takes at most its limit, and an empty queue reads nothing", "[heartbeat_reader]") {
  TempDir directory("pltrun-beats");
  HeartbeatSocket socket(directory / "0.sock");
  CHECK(socket.drain(64).datagrams == 0);
  for (const char* payload : {"1", "2", "3", "beat"}) sendBeat(socket.path(), payload);
  const pltrun::DrainedHeartbeats first = socket.drain(2);
  CHECK(first.datagrams == 2);
  CHECK(first.beat);
  CHECK(first.counter == 2);
  const pltrun::DrainedHeartbeats rest = socket.drain(64);
  CHECK(rest.datagrams == 2);
  CHECK(rest.counter == 3);  // "beat" after it is a heartbeat without a counter
  const pltrun::DrainedHeartbeats none = socket.drain(64);
  CHECK(none.datagrams == 0);
  CHECK_FALSE(none.beat);
}
