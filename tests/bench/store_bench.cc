// store_bench: throughput and latency of a TCPStore server (pltrun-store, or PyTorch's own)
// through pltrun's client, and how many simultaneous connections it holds. Run by
// scripts/bench/store.sh; prints one JSON line on stdout.
//
//   store_bench --host H --port P --dialect torch2|torch113 --clients N --seconds S
//               --op set|get|add|mixed [--value-size 64] [--warmup 0.5] [--idle-connections M]
//   store_bench --host H --port P --dialect torch2|torch113 --connections-only N
//
// Load: N threads, each with its own connection, repeat the operation for S seconds after a
// warm-up (not measured). set and get use a key of each client's own; add alternates one
// counter shared by every client with a counter of the client's own; mixed cycles set, get,
// add. Every operation's latency is recorded (steady_clock).
//
// SET is one-way in the protocol (no reply), so its latency is the time to hand the
// request to the kernel, and a burst of sets could sit unprocessed in socket buffers. To
// count only work the server has done, each thread makes a round trip (CHECK) at the end
// of the warm-up and another after its last operation; the measured window opens when
// every thread's warm-up has been served and ends when the last closing round trip returns.

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_command_line.h"
#include "bench/pipelined_client.h"
#include "pltrun/error.h"
#include "pltrun/tcp_store.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = -1;
  pltrun::StoreDialect dialect = pltrun::StoreDialect::Torch2;
  std::string dialectName = "torch2";
  int clients = 1;
  double seconds = 3;
  double warmup = 0.5;
  std::string op;
  size_t valueSize = 64;
  long connectionsOnly = 0;
  long idleConnections = 0;
  long pipeline = 1;  ///< requests in flight per connection (get and add)
};

[[noreturn]] void usageError(const std::string& message) { bench::usageError("store_bench", message); }

constexpr const char* kHelp =
    "usage: store_bench --port P [--host 127.0.0.1] [--dialect torch2|torch113]\n"
    "                   --op set|get|add|mixed [--clients 1] [--seconds 3] [--value-size 64] [--warmup 0.5]\n"
    "                   [--idle-connections 0] [--pipeline 1]\n"
    "       store_bench --port P [--host 127.0.0.1] [--dialect torch2|torch113] --connections-only N\n"
    "Prints one JSON line on stdout. Exit status: 0 ok, 1 the store failed, 2 bad flags.\n";

long parseInteger(const std::string& flag, const std::string& text, long low, long high) {
  return bench::parseInteger("store_bench", flag, text, low, high);
}

double parseSeconds(const std::string& flag, const std::string& text, double low) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(value >= low) || value > 86400) {
    usageError(flag + " wants a number of seconds (at least " + std::to_string(low) + "), not '" + text + "'");
  }
  return value;
}

Options parseOptions(int argc, char** argv) {
  Options options;
  bench::forEachFlag(argc, argv, "store_bench", kHelp, [&](const std::string& flag, const std::string& value) {
    if (flag == "--host") {
      if (value.empty()) usageError("--host is empty");
      options.host = value;
    } else if (flag == "--port") {
      options.port = static_cast<int>(parseInteger(flag, value, 1, 65535));
    } else if (flag == "--dialect") {
      if (value == "torch2") {
        options.dialect = pltrun::StoreDialect::Torch2;
      } else if (value == "torch113") {
        options.dialect = pltrun::StoreDialect::Torch113;
      } else {
        usageError("--dialect wants torch2 or torch113, not '" + value + "'");
      }
      options.dialectName = value;
    } else if (flag == "--clients") {
      options.clients = static_cast<int>(parseInteger(flag, value, 1, 100000));
    } else if (flag == "--seconds") {
      options.seconds = parseSeconds(flag, value, 0.01);
    } else if (flag == "--warmup") {
      options.warmup = parseSeconds(flag, value, 0);
    } else if (flag == "--op") {
      if (value != "set" && value != "get" && value != "add" && value != "mixed") {
        usageError("--op wants set, get, add or mixed, not '" + value + "'");
      }
      options.op = value;
    } else if (flag == "--value-size") {
      options.valueSize = static_cast<size_t>(parseInteger(flag, value, 0, 64L << 20));
    } else if (flag == "--idle-connections") {
      options.idleConnections = parseInteger(flag, value, 0, 1000000);
    } else if (flag == "--pipeline") {
      options.pipeline = parseInteger(flag, value, 1, 4096);
    } else if (flag == "--connections-only") {
      options.connectionsOnly = parseInteger(flag, value, 1, 1000000);
    } else {
      usageError("unknown flag '" + flag + "'");
    }
  });
  if (options.port < 0) usageError("--port is required");
  if (options.pipeline > 1 && options.op != "get" && options.op != "add") {
    usageError("--pipeline goes with --op get or add");
  }
  if (options.connectionsOnly == 0 && options.op.empty()) usageError("--op (or --connections-only) is required");
  if (options.connectionsOnly != 0 && !options.op.empty()) usageError("--connections-only and --op exclude each other");
  if (options.connectionsOnly != 0 && options.idleConnections != 0) {
    usageError("--idle-connections goes with --op, not --connections-only");
  }
  return options;
}

// Each run's keys are its own, so runs against one long-lived server do not meet.
std::string runPrefix() {
  std::random_device device;
  char text[64];
  std::snprintf(text, sizeof text, "store_bench/%08x%08x/", device(), device());
  return text;
}

// Returns the soft limit now in force.
rlim_t raiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

pltrun::TcpStoreOptions storeOptions(const Options& options, std::chrono::milliseconds connectTimeout,
                                     std::chrono::milliseconds timeout) {
  pltrun::TcpStoreOptions store;
  store.host = options.host;
  store.port = options.port;
  store.dialect = options.dialect;
  store.connectTimeout = connectTimeout;
  store.timeout = timeout;
  return store;
}

// ---- --connections-only ---------------------------------------------------------------

int holdConnections(const Options& options) {
  const long wanted = options.connectionsOnly;
  const rlim_t limit = raiseOpenFileLimit();
  auto fail = [&](long held, const std::string& why) {
    std::printf("{\"connections_wanted\":%ld,\"connections_held\":%ld,\"ok\":false,\"error\":%s}\n", wanted, held,
                jsonString(why).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "store_bench: %s\n", why.c_str());
    return 1;
  };
  if (limit != 0 && limit < static_cast<rlim_t>(wanted) + 16) {
    return fail(0, "the open-file limit is " + std::to_string(limit) + " (hard limit included), too low for " +
                       std::to_string(wanted) + " connections");
  }
  const std::string prefix = runPrefix();
  std::vector<std::unique_ptr<pltrun::TcpStore>> stores;
  stores.reserve(static_cast<size_t>(wanted));
  const auto start = Clock::now();
  // Connect, then prove each connection is served: a round trip, and a set that the
  // final round of gets reads back.
  for (long i = 0; i < wanted; ++i) {
    try {
      stores.push_back(std::make_unique<pltrun::TcpStore>(
          storeOptions(options, std::chrono::seconds(10), std::chrono::seconds(10))));
      stores.back()->ping();
      stores.back()->set(prefix + std::to_string(i), std::to_string(i));
    } catch (const std::exception& error) {
      return fail(i, "connection " + std::to_string(i + 1) + " of " + std::to_string(wanted) + ": " + error.what());
    }
  }
  const auto connected = Clock::now();
  // Every connection still open and served: read each one's key back through it.
  for (long i = 0; i < wanted; ++i) {
    try {
      std::string value = stores[static_cast<size_t>(i)]->get(prefix + std::to_string(i), std::chrono::seconds(10));
      if (value != std::to_string(i)) {
        return fail(wanted, "connection " + std::to_string(i + 1) + " read '" + value + "' back, not '" +
                                std::to_string(i) + "'");
      }
    } catch (const std::exception& error) {
      return fail(
          i, "get on held connection " + std::to_string(i + 1) + " of " + std::to_string(wanted) + ": " + error.what());
    }
  }
  const auto done = Clock::now();
  std::printf("{\"dialect\":%s,\"connections_held\":%ld,\"ok\":true,\"connect_and_set_s\":%.3f,\"get_round_s\":%.3f}\n",
              jsonString(options.dialectName).c_str(), wanted, std::chrono::duration<double>(connected - start).count(),
              std::chrono::duration<double>(done - connected).count());
  std::fflush(stdout);
  return 0;
}

// ---- load ---------------------------------------------------------------------------

enum class Op { Set, Get, Add };

struct Worker {
  std::unique_ptr<pltrun::TcpStore> store;
  std::vector<std::uint64_t> latenciesNs;  // measured operations only
  std::uint64_t ops = 0;
  Clock::time_point end;
  std::string error;
};

double percentileUs(std::vector<std::uint64_t>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  size_t index = static_cast<size_t>(fraction * static_cast<double>(sorted.size() - 1) + 0.5);
  return static_cast<double>(sorted[std::min(index, sorted.size() - 1)]) / 1000.0;
}

int runLoad(const Options& options) {
  raiseOpenFileLimit();
  const std::string prefix = runPrefix();
  const std::string sharedCounter = prefix + "counter";
  const std::string value(options.valueSize, 'v');
  const int clients = options.clients;
  std::vector<Worker> workers(static_cast<size_t>(clients));

  // Connections that stay open and silent through the run, as the many workers of a big
  // job sit on theirs: a server that scans every connection per event pays for them.
  std::vector<std::unique_ptr<pltrun::TcpStore>> idle;
  for (long i = 0; i < options.idleConnections; ++i) {
    try {
      idle.push_back(std::make_unique<pltrun::TcpStore>(
          storeOptions(options, std::chrono::seconds(10), std::chrono::seconds(60))));
      idle.back()->ping();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "store_bench: idle connection %ld of %ld: %s\n", i + 1, options.idleConnections,
                   error.what());
      return 1;
    }
  }

  // Connect every client first (in parallel: 256 sequential connects would be slow against
  // a busy server), and give get something to read.
  {
    std::vector<std::thread> connecting;
    std::atomic<bool> failed{false};
    for (int i = 0; i < clients; ++i) {
      connecting.emplace_back([&, i] {
        Worker& worker = workers[static_cast<size_t>(i)];
        try {
          worker.store = std::make_unique<pltrun::TcpStore>(
              storeOptions(options, std::chrono::seconds(30), std::chrono::seconds(60)));
          worker.store->set(prefix + "c" + std::to_string(i), value);
          worker.store->check({prefix + "c" + std::to_string(i)});
        } catch (const std::exception& error) {
          worker.error = std::string("client ") + std::to_string(i) + " could not start: " + error.what();
          failed = true;
        }
      });
    }
    for (auto& thread : connecting) thread.join();
    if (failed) {
      for (auto& worker : workers) {
        if (!worker.error.empty()) {
          std::fprintf(stderr, "store_bench: %s\n", worker.error.c_str());
          return 1;
        }
      }
    }
  }

  std::vector<Op> cycle;
  if (options.op == "set") cycle = {Op::Set};
  if (options.op == "get") cycle = {Op::Get};
  if (options.op == "add") cycle = {Op::Add};
  if (options.op == "mixed") cycle = {Op::Set, Op::Get, Op::Add};

  // Everyone starts together a little from now and warms up; each client then waits until
  // the server has served its warm-up (a round trip), and the measured window opens when
  // the last client is ready, for everyone at once.
  const auto begin = Clock::now() + std::chrono::milliseconds(50);
  const auto warmupEnd =
      begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.warmup));
  const auto measured = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.seconds));
  std::mutex gate;
  std::condition_variable opened;
  int ready = 0;
  Clock::time_point measureFrom{}, stopAt{};
  auto waitForEveryone = [&] {  // returns when the window opens
    std::unique_lock<std::mutex> lock(gate);
    if (++ready == clients) {
      measureFrom = Clock::now();
      stopAt = measureFrom + measured;
      opened.notify_all();
    } else {
      opened.wait(lock, [&] { return ready >= clients; });
    }
  };
  const size_t expected = static_cast<size_t>(std::min(1.0e6, 200000.0 * options.seconds / clients + 1024));

  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      Worker& worker = workers[static_cast<size_t>(i)];
      worker.latenciesNs.reserve(expected);
      pltrun::TcpStore& store = *worker.store;
      const std::string ownKey = prefix + "c" + std::to_string(i);
      const std::string ownCounter = prefix + "n" + std::to_string(i);
      std::uint64_t step = 0;
      std::unique_ptr<bench::PipelinedClient> pipelined;
      try {
        if (options.pipeline > 1) {
          pipelined = std::make_unique<bench::PipelinedClient>(
              options.port, options.dialect == pltrun::StoreDialect::Torch2 ? pltrun::rdzv::Dialect::Torch2
                                                                            : pltrun::rdzv::Dialect::Torch113);
        }
        std::this_thread::sleep_until(begin);
        auto runOne = [&] {
          if (pipelined) {  // one batch of `pipeline` requests counts as that many operations
            const size_t depth = static_cast<size_t>(options.pipeline);
            if (cycle.front() == Op::Get) pipelined->getBatch(ownKey, depth, value.size());
            if (cycle.front() == Op::Add) pipelined->addBatch(ownCounter, depth);
            return;
          }
          Op op = cycle[step % cycle.size()];
          switch (op) {
            case Op::Set:
              store.set(ownKey, value);
              break;
            case Op::Get:
              if (store.get(ownKey).size() != value.size()) throw std::runtime_error("get returned a wrong value");
              break;
            case Op::Add:
              // One counter every client fights over, then one of this client's own.
              store.add((step / cycle.size()) % 2 == 0 ? sharedCounter : ownCounter, 1);
              break;
          }
          ++step;
        };
        while (Clock::now() < warmupEnd) runOne();
        store.check({ownKey});  // the warm-up's one-way sets are all served now
        waitForEveryone();
        while (true) {
          auto started = Clock::now();
          if (started >= stopAt) break;
          runOne();
          worker.latenciesNs.push_back(static_cast<std::uint64_t>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started).count()));
        }
        store.check({ownKey});  // and so are the measured ones
        worker.end = Clock::now();
        worker.ops = worker.latenciesNs.size() * static_cast<std::uint64_t>(options.pipeline);
      } catch (const std::exception& error) {
        worker.error = std::string("client ") + std::to_string(i) + ": " + error.what();
        worker.end = Clock::now();
        std::lock_guard<std::mutex> lock(gate);
        if (measureFrom == Clock::time_point{}) {  // never leave the others at the gate
          ready = clients;
          measureFrom = Clock::now();
          stopAt = measureFrom;
          opened.notify_all();
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();

  std::vector<std::uint64_t> all;
  std::uint64_t ops = 0;
  const auto warmupS = std::chrono::duration<double>(measureFrom - begin).count();
  auto end = measureFrom;
  size_t failures = 0;
  std::string firstError;
  for (auto& worker : workers) {
    if (!worker.error.empty()) {
      if (failures++ == 0) firstError = worker.error;
      continue;
    }
    ops += worker.ops;
    end = std::max(end, worker.end);
    all.insert(all.end(), worker.latenciesNs.begin(), worker.latenciesNs.end());
  }
  if (failures != 0) {
    std::fprintf(stderr, "store_bench: %zu of %d clients failed; the first: %s\n", failures, clients,
                 firstError.c_str());
    return 1;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // the client's own CPU (connecting and warm-up included)
  const double clientCpuS = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                            static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  std::sort(all.begin(), all.end());
  double sumUs = 0;
  for (auto latency : all) sumUs += static_cast<double>(latency) / 1000.0;
  const double window = std::chrono::duration<double>(end - measureFrom).count();
  const double drainMs = std::chrono::duration<double, std::milli>(end - stopAt).count();
  std::printf(
      "{\"dialect\":%s,\"pipeline\":%ld,\"clients\":%d,\"idle_connections\":%ld,\"op\":%s,\"value_size\":%zu,"
      "\"seconds\":%.3f,\"warmup_s\":%.3f,\"window_s\":%.3f,"
      "\"drain_ms\":%.1f,\"ops\":%" PRIu64
      ",\"ops_per_s\":%.0f,\"mean_us\":%.1f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,"
      "\"max_us\":%.1f,\"client_cpu_s\":%.2f}\n",
      jsonString(options.dialectName).c_str(), options.pipeline, clients, options.idleConnections,
      jsonString(options.op).c_str(), options.valueSize, options.seconds, warmupS, window, drainMs, ops,
      window > 0 ? static_cast<double>(ops) / window : 0.0, all.empty() ? 0.0 : sumUs / static_cast<double>(all.size()),
      percentileUs(all, 0.50), percentileUs(all, 0.90), percentileUs(all, 0.99), percentileUs(all, 0.999),
      all.empty() ? 0.0 : static_cast<double>(all.back()) / 1000.0, clientCpuS);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parseOptions(argc, argv);
  try {
    return options.connectionsOnly != 0 ? holdConnections(options) : runLoad(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "store_bench: %s\n", error.what());
    return 1;
  }
}
