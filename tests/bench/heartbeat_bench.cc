// heartbeat_bench: what one pltrun::heartbeat(step) costs the worker that calls it. Run by
// scripts/bench/heartbeat.sh; prints one line per case.
//
//   heartbeat_bench [--calls 1000000] [--runs 5]
//
// It binds a receiving socket of its own, as pltrun does (a Unix datagram socket in a
// private directory), points PLTRUN_HEARTBEAT at it and times `calls` heartbeats, `runs`
// times, reporting the median ns per call of each case:
//   drained  a thread reads every datagram as it comes, as pltrun does while it keeps up;
//   full     nobody reads: the receiver's queue (net.unix.max_dgram_qlen, 10 by default)
//            is full, every send fails with EAGAIN, and the call must still return at once;
//   unset    PLTRUN_HEARTBEAT unset (outside pltrun): the call does nothing.

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_command_line.h"
#include "helpers/bound_datagram_socket.h"
#include "pltrun/heartbeat.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kProgram = "heartbeat_bench";

constexpr const char* kHelp =
    "usage: heartbeat_bench [--calls N] [--runs R]\n"
    "Times N calls of pltrun::heartbeat(step) R times against a receiver that drains, one that\n"
    "is full, and none (PLTRUN_HEARTBEAT unset); prints the median ns per call of each.\n";

// The receiving socket, its path and its directory, removed at the end.
using Receiver = pltrun::test::BoundDatagramSocket;

// Reads every datagram until stopped, counting them, as pltrun's event loop would.
class Drain {
 public:
  explicit Drain(int fd) : fd_(fd), thread_([this] { run(); }) {}
  ~Drain() {
    stop_ = true;
    thread_.join();
  }
  long received() const { return received_.load(); }

 private:
  void run() {
    char data[64];
    while (!stop_) {
      pollfd ready{fd_, POLLIN, 0};
      if (poll(&ready, 1, 50) != 1) continue;
      while (recv(fd_, data, sizeof data, MSG_DONTWAIT) >= 0) ++received_;
    }
  }

  int fd_;
  std::atomic<bool> stop_{false};
  std::atomic<long> received_{0};
  std::thread thread_;
};

double nanosecondsPerCall(long calls) {
  const auto start = Clock::now();
  for (long step = 0; step < calls; ++step) pltrun::heartbeat(step);
  const std::chrono::duration<double, std::nano> elapsed = Clock::now() - start;
  return elapsed.count() / static_cast<double>(calls);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

std::string runsText(const std::vector<double>& runs) {
  std::string text;
  char number[32];
  for (double run : runs) {
    std::snprintf(number, sizeof number, "%s%.0f", text.empty() ? "" : " ", run);
    text += number;
  }
  return text;
}

void report(const char* name, const std::vector<double>& runs, long calls, const std::string& extra) {
  std::printf("heartbeat %-8s %7.0f ns per call (median of %zu runs of %ld calls; runs: %s)%s\n", name, median(runs),
              runs.size(), calls, runsText(runs).c_str(), extra.c_str());
  std::fflush(stdout);
}

void benchDrained(long calls, long runs) {
  Receiver receiver("pltrun-heartbeat-bench");
  setenv("PLTRUN_HEARTBEAT", receiver.path().c_str(), 1);
  pltrun::heartbeat(0);  // the first call opens the process's socket: not measured
  std::vector<double> times;
  long delivered = -1;  // that first one
  for (long run = 0; run < runs; ++run) {
    Drain drain(receiver.fd());
    times.push_back(nanosecondsPerCall(calls));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it read the last ones
    delivered += drain.received();
  }
  char extra[96];
  std::snprintf(extra, sizeof extra, "; %.1f%% of the heartbeats were read, the rest dropped (EAGAIN)",
                100.0 * static_cast<double>(delivered) / static_cast<double>(calls * runs));
  report("drained", times, calls, extra);
}

void benchFull(long calls, long runs) {
  Receiver receiver("pltrun-heartbeat-bench");
  setenv("PLTRUN_HEARTBEAT", receiver.path().c_str(), 1);
  for (int step = 0; step < 1000; ++step) pltrun::heartbeat(step);  // fill the queue
  std::vector<double> times;
  for (long run = 0; run < runs; ++run) times.push_back(nanosecondsPerCall(calls));
  report("full", times, calls, "; every send fails with EAGAIN");
}

void benchUnset(long calls, long runs) {
  unsetenv("PLTRUN_HEARTBEAT");
  std::vector<double> times;
  for (long run = 0; run < runs; ++run) times.push_back(nanosecondsPerCall(calls));
  report("unset", times, calls, "; outside pltrun: a getenv, nothing sent");
}

}  // namespace

int main(int argc, char** argv) {
  long calls = 1000000;
  long runs = 5;
  bench::forEachFlag(argc, argv, kProgram, kHelp, [&](const std::string& flag, const std::string& value) {
    if (flag == "--calls") {
      calls = bench::parseInteger(kProgram, flag, value, 1, 1000000000);
    } else if (flag == "--runs") {
      runs = bench::parseInteger(kProgram, flag, value, 1, 101);
    } else {
      bench::usageError(kProgram, "unknown flag " + flag);
    }
  });
  try {
    benchDrained(calls, runs);
    benchFull(calls, runs);
  } catch (const std::runtime_error& error) {  // the receiving socket could not be made
    std::fprintf(stderr, "%s: %s\n", kProgram, error.what());
    return 1;
  }
  benchUnset(calls, runs);
  return 0;
}
