// The --metrics endpoint of a live job under a flood (issue 47: "survives a flood of
// connections and garbage requests"): 1000 connections, most of them garbage (binary bytes,
// an oversized head, a body, a head cut off, a request whose answer is never read), while
// slow clients trickle a head a byte at a time (slowloris). Scrapes still answer during and
// after it, pltrun keeps no descriptor of it, and the job ends 0.

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <thread>

#include "e2e/loopback_http.h"
#include "e2e/metrics_job.h"
#include "e2e/metrics_scrape.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

// The bytes the `index`-th connection of the flood sends before it closes.
std::string garbage(int index, std::mt19937& random) {
  switch (index % 6) {
    case 0:
      return "";  // connects and closes
    case 1: {
      std::string bytes(512, '\0');
      for (char& byte : bytes) byte = static_cast<char>(random());
      return bytes;
    }
    case 2:
      return "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n";
    case 3:
      return "POST /metrics HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" + std::string(4096, 'b');
    case 4:
      return "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ";  // a head cut off
    default:
      return "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";  // its answer never read
  }
}

// 1000 connections, 50 open at a time, each sending its garbage and closing.
void flood(int port) {
  std::mt19937 random(47);
  for (int batch = 0; batch < 20; ++batch) {
    std::vector<int> open;
    for (int index = batch * 50; index < (batch + 1) * 50; ++index) {
      const int fd = startConnecting(port);
      if (fd < 0) continue;
      const std::string bytes = garbage(index, random);
      std::this_thread::sleep_for(1ms);  // the connection established (loopback), then its bytes
      (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      open.push_back(fd);
    }
    for (const int fd : open) close(fd);
  }
}

// Whether GET /metrics answers 200 within `timeout`, trying again while the server sheds
// connections over its limit.
bool answers(int port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (httpGet(port, "/metrics", 2s).status == 200) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

// Whether /metrics shows the heartbeat age of all 4 ranks within `timeout`.
bool everyRankBeats(int port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (samples(scrapeMetrics(port), "pltrun_rank_heartbeat_age_seconds").size() == 4) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

size_t openDescriptors(pid_t pid) {
  const auto fds = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd");
  return static_cast<size_t>(std::distance(std::filesystem::begin(fds), std::filesystem::end(fds)));
}

}  // namespace

TEST_CASE(
    "metrics: the endpoint of a live job survives 1000 connections of garbage and slow clients, still "
    "answers scrapes during and after, keeps no descriptor, and the job ends 0",
    "[metrics]") {
  MetricsJob job("flood-job", {});
  const int port = job.metricsPort();
  INFO(job.process->stderrSoFar());
  REQUIRE(port > 0);
  REQUIRE(everyRankBeats(port, 30s));  // the job has opened what it holds while it runs
  const size_t before = openDescriptors(job.process->pid());

  std::vector<int> slow;  // slowloris: a head that never ends, a byte every 100 ms
  for (int index = 0; index < 8; ++index) slow.push_back(startConnecting(port));
  std::atomic<bool> trickling{true};
  std::thread trickle([&] {
    for (const int fd : slow) (void)!send(fd, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL);
    while (trickling) {
      for (const int fd : slow) (void)!send(fd, "X", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(100ms);
    }
  });
  flood(port);
  CHECK(answers(port, 10s));  // while the slow clients still trickle
  trickling = false;
  trickle.join();
  for (const int fd : slow) close(fd);

  REQUIRE(answers(port, 10s));
  const HttpAnswer after = httpGet(port, "/metrics");
  INFO(after.body);
  CHECK(samples(after.body, "pltrun_rank_heartbeat_age_seconds").size() == 4);
  CHECK(httpGet(port, "/nothing-here").status == 404);
  // Every connection of the flood closed: pltrun holds no more descriptors than before it
  // (a few of slack for what it opens of its own; a leak would be hundreds).
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (openDescriptors(job.process->pid()) > before + 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  CHECK(openDescriptors(job.process->pid()) <= before + 3);

  const Finished end = job.finish();
  INFO(end.err);
  CHECK(end.status == 0);
}
