// rendezvous_bench: how long the elastic rendezvous (rendezvous/elastic_rendezvous.{h,cc},
// the code pltrun's agents run) takes to form a job of P nodes against one store. Run by
// scripts/bench/elastic.sh; prints one JSON line per run on stdout.
//
//   rendezvous_bench [--participants 64,512,4096] [--repeat 3] [--port P | --etcd HOST:PORT[,HOST:PORT...]]
//                    [--local-world-size 8] [--stack-kib 256] [--poll-ms 500] [--cpu-of PID,...]
//
// Each participant is a light-weight agent: a thread with its own TcpStore connection that
// calls ElasticRendezvous(...).join(-1, nullopt, {}) with minNodes = maxNodes = P and a
// descriptor of its own (agent id, host bench-N, addr 127.x.y.z, localWorldSize 8). The
// store is a StoreServer on a thread of this process (the way an agent hosts it), or,
// with --port, a running pltrun-store on 127.0.0.1:P, or, with --etcd, an etcd cluster: then
// each participant is an EtcdStore client of its own (one connection, watches on others),
// all on one lease, as the clients of one agent are. Where that would pass the open-file
// limit (on etcd about 8 descriptors a participant: 4096 need more than the 20,000 an
// unprivileged process gets here), the participants are split across child processes,
// each with a lease of its own, and the JSON line says how many ("processes").
//
// Every participant connects first and then waits at a start barrier; the time runs from
// the barrier's release to the return of the last join(). Each run checks the result:
// one round, P nodes, node ranks a permutation of 0..P-1, world size P * localWorldSize,
// global ranks following node ranks. Every run uses a fresh run id (and fresh connections).
//
// The store calls of every participant go through a counting decorator, so each run also
// reports the requests each kind of call made and their summed latency, when the phases of
// the rendezvous ended (all slots taken and described, the closer's lock won, the round
// marked complete), and the CPU time of the store's thread against the whole process.

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_command_line.h"
#include "pltrun/error.h"
#include "pltrun/tcp_store.h"
#include "rendezvous/elastic/elastic_rendezvous.h"
#include "rendezvous/etcd/etcd_store.h"
#include "rendezvous/store/server/store_server.h"
#include "store/server_thread.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<int> participants{64, 512, 4096};
  int repeat = 3;
  int port = 0;                        ///< 0: a StoreServer on a thread of this process
  std::vector<pltrun::Endpoint> etcd;  ///< set: the participants meet in this etcd cluster
  int localWorldSize = 8;
  size_t stackKib = 256;
  int pollMs = 500;        ///< ElasticRendezvousOptions::pollInterval (the agent's default)
  std::vector<int> cpuOf;  ///< processes (etcd's members) whose CPU during the rendezvous is reported
};

[[noreturn]] void usageError(const std::string& message) { bench::usageError("rendezvous_bench", message); }

constexpr const char* kHelp =
    "usage: rendezvous_bench [--participants 64,512,4096] [--repeat 3] [--port P | --etcd HOST:PORT[,...]]\n"
    "                        [--local-world-size 8] [--stack-kib 256] [--poll-ms 500] [--cpu-of PID,...]\n"
    "Forms one elastic rendezvous round of P participants (threads, one store connection each)\n"
    "against a store on a thread of this process, a pltrun-store on 127.0.0.1:P (--port), or etcd.\n"
    "Prints one JSON line per run. Exit status: 0 every run formed correctly, 1 one did not, 2 bad flags.\n";

long parseInteger(const std::string& flag, const std::string& text, long low, long high) {
  return bench::parseInteger("rendezvous_bench", flag, text, low, high);
}

Options parseOptions(int argc, char** argv) {
  Options options;
  bench::forEachFlag(argc, argv, "rendezvous_bench", kHelp, [&](const std::string& flag, const std::string& value) {
    if (flag == "--participants") {
      options.participants.clear();
      bench::forEachCommaItem(value, [&](const std::string& item) {
        options.participants.push_back(static_cast<int>(parseInteger(flag, item, 1, 100000)));
      });
    } else if (flag == "--repeat") {
      options.repeat = static_cast<int>(parseInteger(flag, value, 1, 1000));
    } else if (flag == "--port") {
      options.port = static_cast<int>(parseInteger(flag, value, 1, 65535));
    } else if (flag == "--etcd") {
      // The cluster's members, HOST:PORT,HOST:PORT,...: each client tries them in this order.
      bench::forEachCommaItem(value, [&](const std::string& member) {
        const size_t colon = member.rfind(':');
        if (colon == std::string::npos) usageError("--etcd expects HOST:PORT[,HOST:PORT...], not '" + value + "'");
        options.etcd.push_back(pltrun::Endpoint{
            member.substr(0, colon), static_cast<int>(parseInteger(flag, member.substr(colon + 1), 1, 65535))});
      });
    } else if (flag == "--local-world-size") {
      options.localWorldSize = static_cast<int>(parseInteger(flag, value, 1, 1024));
    } else if (flag == "--stack-kib") {
      options.stackKib = static_cast<size_t>(parseInteger(flag, value, 64, 65536));
    } else if (flag == "--poll-ms") {
      options.pollMs = static_cast<int>(parseInteger(flag, value, 1, 600000));
    } else if (flag == "--cpu-of") {
      bench::forEachCommaItem(value, [&](const std::string& pid) {
        options.cpuOf.push_back(static_cast<int>(parseInteger(flag, pid, 1, INT_MAX)));
      });
    } else {
      usageError("unknown flag '" + flag + "'");
    }
  });
  return options;
}

std::int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

std::int64_t threadCpuNs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

std::int64_t processCpuNs() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

// CPU seconds, for where a rendezvous's time went: the machine's busy time (all CPUs, from
// /proc/stat) and that of the processes named by --cpu-of (etcd's members, /proc/PID/stat),
// sampled as the start gate opens and once the last join returned.
struct CpuSample {
  double machineBusyS = 0;
  double watchedS = 0;
};

CpuSample sampleCpu(const std::vector<int>& pids) {
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  CpuSample sample;
  if (FILE* stat = std::fopen("/proc/stat", "r")) {
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (std::fscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait, &irq,
                    &softirq, &steal) == 8) {
      sample.machineBusyS = static_cast<double>(user + nice + system + irq + softirq + steal) / tick;
    }
    std::fclose(stat);
  }
  for (int pid : pids) {
    FILE* stat = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (!stat) continue;
    char text[1024] = "";
    const size_t length = std::fread(text, 1, sizeof text - 1, stat);
    std::fclose(stat);
    text[length] = '\0';
    const char* afterName = std::strrchr(text, ')');  // fields 14 and 15 (utime, stime) follow the name
    unsigned long long utime = 0, stime = 0;
    if (afterName &&
        std::sscanf(afterName + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2) {
      sample.watchedS += static_cast<double>(utime + stime) / tick;
    }
  }
  return sample;
}

// ---- a start barrier that releases every thread with one futex wake ------------------

class StartGate {
 public:
  void wait() {
    while (open_.load(std::memory_order_acquire) == 0) {
      syscall(SYS_futex, reinterpret_cast<int*>(&open_), FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
    }
  }
  void release() {
    open_.store(1, std::memory_order_release);
    syscall(SYS_futex, reinterpret_cast<int*>(&open_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }

 private:
  std::atomic<int> open_{0};
  static_assert(sizeof(std::atomic<int>) == sizeof(int), "futex on std::atomic<int>");
};

// ---- the counting decorator ------------------------------------------------------------

enum Op {
  kSet,
  kGet,
  kAdd,
  kIncrement,
  kCompareSet,
  kCheck,
  kWait,
  kWaitTimeout,
  kMultiGet,
  kMultiSet,
  kCloseNotice,
  kOther,
  kOps
};
constexpr std::array<const char*, kOps> kOpNames = {"set",         "get",       "add",          "increment",
                                                    "compare_set", "check",     "wait",         "wait_timed_out",
                                                    "multi_get",   "multi_set", "close_notice", "other"};

// Times every participant shares: when the phases of the rendezvous ended.
struct Phases {
  std::atomic<std::int64_t> lastSlotDescribedNs{0};  ///< the last rR/slot/I set returned
  std::atomic<std::int64_t> closerLockNs{0};         ///< the closer won rR/closing
  std::atomic<std::int64_t> completeNs{0};           ///< the closer's rR/complete set returned
  std::atomic<std::int64_t> closerMultiGetNs{0};     ///< the closer's multiGet of the slots took
  std::atomic<std::int64_t> closerMultiSetNs{0};     ///< the closer's multiSet of the assignments took
};

void atomicMax(std::atomic<std::int64_t>& target, std::int64_t value) {
  std::int64_t current = target.load();
  while (current < value && !target.compare_exchange_weak(current, value)) {
  }
}

class CountingStore : public pltrun::Store {
 public:
  CountingStore(std::unique_ptr<pltrun::Store> inner, Phases& phases, std::string agentId)
      : inner_(std::move(inner)), phases_(phases), agentId_(std::move(agentId)) {}

  std::array<std::uint64_t, kOps> calls{};
  std::array<std::int64_t, kOps> ns{};

  void set(const std::string& key, const std::string& value) override {
    auto started = nowNs();
    inner_->set(key, value);
    auto ended = count(kSet, started);
    if (key.find("/slot/") != std::string::npos) atomicMax(phases_.lastSlotDescribedNs, ended);
    if (ends(key, "/complete")) phases_.completeNs = ended;
  }
  std::string get(const std::string& key, Duration timeout) override {
    auto started = nowNs();
    auto value = inner_->get(key, timeout);
    count(kGet, started);
    return value;
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    auto started = nowNs();
    auto value = inner_->add(key, delta);
    count(kAdd, started);
    return value;
  }
  std::int64_t increment(const std::string& key) override {
    auto started = nowNs();
    auto value = inner_->increment(key);
    count(kIncrement, started);
    return value;
  }
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override {
    auto started = nowNs();
    auto value = inner_->compareSet(key, expected, desired);
    auto ended = count(kCompareSet, started);
    if (ends(key, "/closing") && value == agentId_) phases_.closerLockNs = ended;
    return value;
  }
  bool check(const std::vector<std::string>& keys) override {
    auto started = nowNs();
    bool value = inner_->check(keys);
    count(kCheck, started);
    return value;
  }
  void wait(const std::vector<std::string>& keys, Duration timeout) override {
    auto started = nowNs();
    try {
      inner_->wait(keys, timeout);
    } catch (const pltrun::Error& error) {
      count(error.code() == pltrun::ErrorCode::Timeout ? kWaitTimeout : kWait, started);
      throw;
    }
    count(kWait, started);
  }
  // Counted as a wait: one waitAny is one wait of the agent, however many keys it names.
  std::size_t waitAny(const std::vector<std::string>& keys, Duration timeout, Duration slice,
                      const std::function<void()>& between) override {
    auto started = nowNs();
    try {
      const std::size_t index = inner_->waitAny(keys, timeout, slice, between);
      count(kWait, started);
      return index;
    } catch (const pltrun::Error& error) {
      count(error.code() == pltrun::ErrorCode::Timeout ? kWaitTimeout : kWait, started);
      throw;
    }
  }
  bool deleteKey(const std::string& key) override {
    auto started = nowNs();
    bool value = inner_->deleteKey(key);
    count(kOther, started);
    return value;
  }
  std::int64_t numKeys() override {
    auto started = nowNs();
    auto value = inner_->numKeys();
    count(kOther, started);
    return value;
  }
  void append(const std::string& key, const std::string& value) override {
    auto started = nowNs();
    inner_->append(key, value);
    count(kOther, started);
  }
  std::vector<std::string> multiGet(const std::vector<std::string>& keys, Duration timeout) override {
    auto started = nowNs();
    auto values = inner_->multiGet(keys, timeout);
    phases_.closerMultiGetNs = count(kMultiGet, started) - started;
    return values;
  }
  void multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) override {
    auto started = nowNs();
    inner_->multiSet(keys, values);
    phases_.closerMultiSetNs = count(kMultiSet, started) - started;
  }
  void setEphemeral(const std::string& key, const std::string& value) override {
    auto started = nowNs();
    inner_->setEphemeral(key, value);
    count(kOther, started);
  }
  void setCloseNotice(const std::string& key, const std::string& value) override {
    auto started = nowNs();
    inner_->setCloseNotice(key, value);
    count(kCloseNotice, started);
  }

 private:
  static bool ends(const std::string& key, const char* suffix) {
    const size_t length = std::strlen(suffix);
    return key.size() >= length && key.compare(key.size() - length, length, suffix) == 0;
  }
  std::int64_t count(Op op, std::int64_t started) {
    const std::int64_t ended = nowNs();
    ++calls[op];
    ns[op] += ended - started;
    return ended;
  }

  std::unique_ptr<pltrun::Store> inner_;
  Phases& phases_;
  std::string agentId_;
};

// ---- one run -----------------------------------------------------------------------------

struct Participant {
  std::unique_ptr<CountingStore> store;
  std::optional<pltrun::rdzv::RoundInfo> info;
  std::int64_t joinedNs = 0;  ///< when join() returned
  std::string error;
};

struct RunContext {
  const Options* options = nullptr;
  int port = 0;
  const pltrun::etcd::EtcdStore* etcd = nullptr;  ///< set: each participant connects to it instead
  int count = 0;
  std::string runId;
  std::vector<Participant> participants;
  Phases phases;
  StartGate gate;
  std::atomic<int> connected{0};
  std::atomic<int> failedToConnect{0};
  std::atomic<bool> aborted{false};  ///< set before the gate opens: nobody joins
  std::int64_t releasedNs = 0;
};

struct ThreadArgument {
  RunContext* run;
  int index;
};

pltrun::rdzv::NodeDescriptor descriptorFor(int index, int localWorldSize, const std::string& runId) {
  pltrun::rdzv::NodeDescriptor self;
  self.agentId = "bench-" + std::to_string(index) + ":" + std::to_string(getpid()) + ":" + runId;
  self.host = "bench-" + std::to_string(index);
  const int n = index + 1;  // 127.0.0.1 ... 127.0.16.0, distinct for up to 65535 nodes
  self.addr = "127.0." + std::to_string(n / 256) + "." + std::to_string(n % 256);
  self.localWorldSize = localWorldSize;
  return self;
}

void* participantMain(void* raw) {
  auto* argument = static_cast<ThreadArgument*>(raw);
  RunContext& run = *argument->run;
  const int index = argument->index;
  Participant& me = run.participants[static_cast<size_t>(index)];
  const pltrun::rdzv::NodeDescriptor self = descriptorFor(index, run.options->localWorldSize, run.runId);
  try {
    std::unique_ptr<pltrun::Store> inner;
    if (run.etcd) {
      inner = run.etcd->connect();
      inner->check({"bench-warm-up"});  // connected before the barrier, like the TCP ping
    } else {
      pltrun::TcpStoreOptions options;
      options.host = "127.0.0.1";
      options.port = run.port;
      options.connectTimeout = std::chrono::seconds(60);
      options.timeout = std::chrono::seconds(120);
      auto tcp = std::make_unique<pltrun::TcpStore>(options);
      tcp->ping();
      inner = std::move(tcp);
    }
    me.store = std::make_unique<CountingStore>(std::move(inner), run.phases, self.agentId);
  } catch (const std::exception& error) {
    me.error = "participant " + std::to_string(index) + " could not connect: " + error.what();
    run.failedToConnect.fetch_add(1);
  }
  run.connected.fetch_add(1);
  run.gate.wait();
  if (!me.store || run.aborted.load()) return nullptr;
  try {
    pltrun::rdzv::ElasticRendezvousOptions rdzvOptions;
    rdzvOptions.runId = run.runId;
    rdzvOptions.minNodes = run.count;
    rdzvOptions.maxNodes = run.count;
    rdzvOptions.joinTimeout = std::chrono::seconds(120);
    rdzvOptions.pollInterval = std::chrono::milliseconds(run.options->pollMs);
    pltrun::rdzv::ElasticRendezvous rendezvous(*me.store, rdzvOptions, self);
    me.info = rendezvous.join(-1, std::nullopt, {});
    me.joinedNs = nowNs();
  } catch (const pltrun::rdzv::JobClosed& closed) {
    me.error = "participant " + std::to_string(index) + ": the job closed: " + closed.end.describe();
    me.joinedNs = nowNs();
  } catch (const std::exception& error) {
    me.error = "participant " + std::to_string(index) + ": " + error.what();
    me.joinedNs = nowNs();
  }
  return nullptr;
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

std::string randomHex() {
  std::random_device device;
  char text[24];
  std::snprintf(text, sizeof text, "%08x%08x", device(), device());
  return text;
}

// What one run gathered: from its threads in this process, or from the processes it was
// split across (each a slice of the participants).
struct Outcome {
  std::vector<Participant> participants;  ///< every participant; those of other slices unfilled
  std::string failure;                    ///< set: a participant could not connect, nobody joined
  std::int64_t connectNs = 0;             ///< from the first thread's start to every connection made
  std::int64_t releasedNs = 0;            ///< when the start gate opened
  std::int64_t cpuNs = 0;                 ///< CPU of the participants' process(es) from the gate on
  long contextSwitches = 0;
  std::array<std::uint64_t, kOps> calls{};
  std::array<std::int64_t, kOps> ns{};
  std::int64_t lastSlotDescribedNs = 0, closerLockNs = 0, completeNs = 0, closerMultiGetNs = 0, closerMultiSetNs = 0;
  CpuSample cpuAtRelease, cpuAtEnd;  ///< set by the process that opens the gate
};

// Adds a slice's figures to the whole run's (participants of other slices are unfilled).
void merge(Outcome& whole, Outcome&& slice) {
  for (size_t i = 0; i < slice.participants.size(); ++i) {
    Participant& p = slice.participants[i];
    if (p.info || !p.error.empty()) whole.participants[i] = std::move(p);
  }
  if (whole.failure.empty()) whole.failure = slice.failure;
  whole.connectNs = std::max(whole.connectNs, slice.connectNs);
  whole.cpuNs += slice.cpuNs;
  whole.contextSwitches += slice.contextSwitches;
  for (int op = 0; op < kOps; ++op) {
    whole.calls[static_cast<size_t>(op)] += slice.calls[static_cast<size_t>(op)];
    whole.ns[static_cast<size_t>(op)] += slice.ns[static_cast<size_t>(op)];
  }
  for (auto field : {&Outcome::lastSlotDescribedNs, &Outcome::closerLockNs, &Outcome::completeNs,
                     &Outcome::closerMultiGetNs, &Outcome::closerMultiSetNs}) {
    whole.*field = std::max(whole.*field, slice.*field);
  }
}

// The result every correct rendezvous gives; empty when it holds.
std::string checkResult(const std::vector<Participant>& participants, const std::string& runId, int localWorldSize) {
  const int count = static_cast<int>(participants.size());
  std::vector<int> byRank(static_cast<size_t>(count), -1), bySlot(static_cast<size_t>(count) + 1, -1);
  for (int i = 0; i < count; ++i) {
    const Participant& p = participants[static_cast<size_t>(i)];
    const std::string who = "participant " + std::to_string(i);
    if (!p.error.empty()) return p.error;
    if (!p.info) return who + " has no result";
    const auto& info = *p.info;
    const auto& a = info.assignment;
    if (info.round != 0) return who + " joined round " + std::to_string(info.round) + ", not 0";
    if (a.nnodes != count) return who + " sees " + std::to_string(a.nnodes) + " nodes, not " + std::to_string(count);
    if (a.worldSize != count * localWorldSize) {
      return who + " sees world size " + std::to_string(a.worldSize) + ", not " +
             std::to_string(count * localWorldSize);
    }
    if (a.nodeRank < 0 || a.nodeRank >= count) return who + " has node rank " + std::to_string(a.nodeRank);
    if (byRank[static_cast<size_t>(a.nodeRank)] != -1) {
      return "node rank " + std::to_string(a.nodeRank) + " given twice (participants " +
             std::to_string(byRank[static_cast<size_t>(a.nodeRank)]) + " and " + std::to_string(i) + ")";
    }
    byRank[static_cast<size_t>(a.nodeRank)] = i;
    if (a.firstRank != a.nodeRank * localWorldSize) {
      return who + " (node rank " + std::to_string(a.nodeRank) + ") has first rank " + std::to_string(a.firstRank);
    }
    if (info.slot < 1 || info.slot > count || bySlot[static_cast<size_t>(info.slot)] != -1) {
      return who + " has slot " + std::to_string(info.slot) + " (out of range or given twice)";
    }
    bySlot[static_cast<size_t>(info.slot)] = i;
  }
  // Node ranks go by (addr, agentId): the node of rank 0 holds the smallest address.
  const int rank0 = byRank[0];
  const std::string rank0Addr = descriptorFor(rank0, localWorldSize, runId).addr;
  for (int i = 0; i < count; ++i) {
    if (participants[static_cast<size_t>(i)].info->assignment.rank0Addr != rank0Addr) {
      return "participant " + std::to_string(i) + " names a different rank 0 address";
    }
  }
  return "";
}

struct ServerCpu {
  pltrun::test::ServerThread* inProcess = nullptr;
  std::int64_t read() const {
    if (inProcess == nullptr) return -1;
    return inProcess->onServer([] { return threadCpuNs(); });
  }
};

// Runs participants [first, last) of a run of `count` as threads of this process: starts
// and connects them, then asks `release` when to open the start gate (given the first
// connection failure, or ""; it returns the release time, or 0 for nobody to join), and
// waits for their joins.
Outcome runSlice(const Options& options, int port, const pltrun::etcd::EtcdStore* etcd, int count,
                 const std::string& runId, int first, int last,
                 const std::function<std::int64_t(const std::string&)>& release) {
  RunContext run;
  run.options = &options;
  run.port = port;
  run.etcd = etcd;
  run.count = count;
  run.runId = runId;
  run.participants.resize(static_cast<size_t>(count));
  std::vector<ThreadArgument> arguments(static_cast<size_t>(count));
  std::vector<pthread_t> threads(static_cast<size_t>(count));

  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, options.stackKib * 1024);
  Outcome outcome;
  const auto connectStart = nowNs();
  int started = first;
  for (int i = first; i < last; ++i) {
    arguments[static_cast<size_t>(i)] = ThreadArgument{&run, i};
    int error = pthread_create(&threads[static_cast<size_t>(i)], &attributes, participantMain,
                               &arguments[static_cast<size_t>(i)]);
    if (error != 0) {
      outcome.failure =
          "thread " + std::to_string(i + 1) + " of " + std::to_string(count) + ": " + std::strerror(error);
      break;
    }
    ++started;
  }
  pthread_attr_destroy(&attributes);
  while (run.connected.load() < started - first) usleep(1000);
  outcome.connectNs = nowNs() - connectStart;
  for (int i = first; outcome.failure.empty() && i < started; ++i) {
    outcome.failure = run.participants[static_cast<size_t>(i)].error;
  }

  const auto cpuBefore = processCpuNs();
  rusage usageBefore{};
  getrusage(RUSAGE_SELF, &usageBefore);
  outcome.cpuAtRelease = sampleCpu(options.cpuOf);
  run.releasedNs = release(outcome.failure);
  run.aborted = run.releasedNs == 0;  // nobody joins: the threads return at once
  run.gate.release();
  for (int i = first; i < started; ++i) pthread_join(threads[static_cast<size_t>(i)], nullptr);
  outcome.cpuAtEnd = sampleCpu(options.cpuOf);
  rusage usageAfter{};
  getrusage(RUSAGE_SELF, &usageAfter);
  outcome.cpuNs = processCpuNs() - cpuBefore;
  outcome.contextSwitches =
      (usageAfter.ru_nvcsw - usageBefore.ru_nvcsw) + (usageAfter.ru_nivcsw - usageBefore.ru_nivcsw);
  outcome.releasedNs = run.releasedNs;
  for (const auto& p : run.participants) {
    if (!p.store) continue;
    for (int op = 0; op < kOps; ++op) {
      outcome.calls[static_cast<size_t>(op)] += p.store->calls[static_cast<size_t>(op)];
      outcome.ns[static_cast<size_t>(op)] += p.store->ns[static_cast<size_t>(op)];
    }
  }
  outcome.lastSlotDescribedNs = run.phases.lastSlotDescribedNs.load();
  outcome.closerLockNs = run.phases.closerLockNs.load();
  outcome.completeNs = run.phases.completeNs.load();
  outcome.closerMultiGetNs = run.phases.closerMultiGetNs.load();
  outcome.closerMultiSetNs = run.phases.closerMultiSetNs.load();
  outcome.participants = std::move(run.participants);
  return outcome;
}

// ---- a run split across processes --------------------------------------------------------
// On etcd a waiting participant holds about 8 descriptors (two connections, each with an
// io_context of its own), so 4096 of them are past a 20,000 open-file limit that an
// unprivileged process cannot raise. The participants are then split across child
// processes, each with its own EtcdStore (its own lease, as separate agents have), that
// meet the same run id; the parent opens every child's start gate at one moment and
// gathers their results through pipes, one line each.

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.empty() ? "-" : text;
}

// The child's side: its slice's figures, one line each, to `out`.
void writeSlice(FILE* out, const Outcome& outcome, int first, int last) {
  std::fprintf(out, "S %lld %lld %ld %lld %lld %lld %lld %lld\n", static_cast<long long>(outcome.connectNs),
               static_cast<long long>(outcome.cpuNs), outcome.contextSwitches,
               static_cast<long long>(outcome.lastSlotDescribedNs), static_cast<long long>(outcome.closerLockNs),
               static_cast<long long>(outcome.completeNs), static_cast<long long>(outcome.closerMultiGetNs),
               static_cast<long long>(outcome.closerMultiSetNs));
  for (int op = 0; op < kOps; ++op) {
    std::fprintf(out, "O %d %llu %lld\n", op, static_cast<unsigned long long>(outcome.calls[static_cast<size_t>(op)]),
                 static_cast<long long>(outcome.ns[static_cast<size_t>(op)]));
  }
  for (int i = first; i < last; ++i) {
    const Participant& p = outcome.participants[static_cast<size_t>(i)];
    if (p.info) {
      const auto& a = p.info->assignment;
      std::fprintf(out, "P %d %lld %lld %d %d %d %d %d %s\n", i, static_cast<long long>(p.joinedNs),
                   static_cast<long long>(p.info->round), p.info->slot, a.nnodes, a.worldSize, a.nodeRank, a.firstRank,
                   a.rank0Addr.c_str());
    } else {
      std::fprintf(out, "E %d %lld %s\n", i, static_cast<long long>(p.joinedNs),
                   oneLine(p.error.empty() ? "participant " + std::to_string(i) + " has no result" : p.error).c_str());
    }
  }
}

// One line from `in` without its newline; nullopt at the end of the stream.
std::optional<std::string> readLine(FILE* in) {
  char* line = nullptr;
  size_t capacity = 0;
  const ssize_t length = getline(&line, &capacity, in);
  std::optional<std::string> text;
  if (length > 0) text.emplace(line, static_cast<size_t>(line[length - 1] == '\n' ? length - 1 : length));
  std::free(line);
  return text;
}

// The parent's side: a child's lines back into an Outcome of `count` participants.
Outcome readSlice(FILE* in, int count) {
  Outcome outcome;
  outcome.participants.resize(static_cast<size_t>(count));
  for (std::optional<std::string> text = readLine(in); text && *text != "Z"; text = readLine(in)) {
    const char* line = text->c_str();
    long long a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0;
    int index = 0, slot = 0, nnodes = 0, world = 0, nodeRank = 0, firstRank = 0, used = 0;
    char addr[64] = "";
    if (std::sscanf(line, "S %lld %lld %lld %lld %lld %lld %lld %lld", &a, &b, &c, &d, &e, &f, &g, &h) == 8) {
      outcome.connectNs = a;
      outcome.cpuNs = b;
      outcome.contextSwitches = static_cast<long>(c);
      outcome.lastSlotDescribedNs = d;
      outcome.closerLockNs = e;
      outcome.completeNs = f;
      outcome.closerMultiGetNs = g;
      outcome.closerMultiSetNs = h;
    } else if (std::sscanf(line, "O %d %lld %lld", &index, &a, &b) == 3 && index >= 0 && index < kOps) {
      outcome.calls[static_cast<size_t>(index)] = static_cast<std::uint64_t>(a);
      outcome.ns[static_cast<size_t>(index)] = b;
    } else if (std::sscanf(line, "P %d %lld %lld %d %d %d %d %d %63s", &index, &a, &b, &slot, &nnodes, &world,
                           &nodeRank, &firstRank, addr) == 9 &&
               index >= 0 && index < count) {
      Participant& p = outcome.participants[static_cast<size_t>(index)];
      p.joinedNs = a;
      p.info.emplace();
      p.info->round = static_cast<int>(b);
      p.info->slot = slot;
      p.info->assignment.nnodes = nnodes;
      p.info->assignment.worldSize = world;
      p.info->assignment.nodeRank = nodeRank;
      p.info->assignment.firstRank = firstRank;
      p.info->assignment.rank0Addr = addr;
    } else if (std::sscanf(line, "E %d %lld %n", &index, &a, &used) == 2 && index >= 0 && index < count) {
      outcome.participants[static_cast<size_t>(index)].joinedNs = a;
      outcome.participants[static_cast<size_t>(index)].error = text->substr(static_cast<size_t>(used));
    }
  }
  return outcome;
}

std::unique_ptr<pltrun::etcd::EtcdStore> makeEtcdStore(const Options& options) {
  pltrun::etcd::EtcdStoreOptions etcdOptions;
  etcdOptions.client.endpoints = options.etcd;
  etcdOptions.client.timeout = std::chrono::seconds(60);  // a thousand clients at once on 2 cores
  etcdOptions.keyPrefix = "/pltrun-bench/";
  etcdOptions.timeout = std::chrono::seconds(120);
  return std::make_unique<pltrun::etcd::EtcdStore>(etcdOptions);
}

// In a child: its slice against its own EtcdStore. It says it is connected ("R" and the
// first failure, or "-"), runs when the parent says "G <release time>", writes its slice
// ending with "Z", and tears down (its participants' close notices, its lease) only once
// the parent has every slice and closes the pipe, so that no lease of this run expires
// into the next one and nothing ends the round while another child still joins.
[[noreturn]] void runChild(const Options& options, int count, const std::string& runId, int first, int last,
                           int toParent, int fromParent) {
  FILE* out = fdopen(toParent, "w");
  FILE* in = fdopen(fromParent, "r");
  auto released = [&](const std::string& failure) -> std::int64_t {
    std::fprintf(out, "R %s\n", oneLine(failure).c_str());
    std::fflush(out);
    const std::optional<std::string> go = readLine(in);
    return go && go->rfind("G ", 0) == 0 ? std::atoll(go->c_str() + 2) : 0;
  };
  Outcome outcome;
  std::unique_ptr<pltrun::etcd::EtcdStore> etcd;
  try {
    etcd = makeEtcdStore(options);
    outcome = runSlice(options, 0, etcd.get(), count, runId, first, last, released);
  } catch (const std::exception& error) {
    released(std::string("cannot reach etcd: ") + error.what());
    outcome.participants.resize(static_cast<size_t>(count));
  }
  writeSlice(out, outcome, first, last);
  std::fprintf(out, "Z\n");
  std::fflush(out);
  while (readLine(in)) {
  }
  outcome.participants.clear();
  etcd.reset();
  _exit(0);  // the parent's objects, copied by fork, are not this child's to destroy
}

// How a child ended, in words; empty when it exited 0.
std::string childEnd(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return std::string("waitpid: ") + std::strerror(errno);
  if (WIFSIGNALED(status)) return "a child process was killed by signal " + std::to_string(WTERMSIG(status));
  if (WEXITSTATUS(status) != 0) return "a child process exited with status " + std::to_string(WEXITSTATUS(status));
  return "";
}

// Forks `processes` children, each with an equal slice, opens their gates together and
// gathers their outcomes. The parent holds no threads when it forks.
Outcome runAcrossProcesses(const Options& options, int count, const std::string& runId, int processes) {
  struct Child {
    pid_t pid = -1;
    FILE* fromChild = nullptr;
    FILE* toChild = nullptr;
    bool connected = false;  ///< said "R": it waits for "G"
  };
  std::vector<Child> children(static_cast<size_t>(processes));
  for (int k = 0; k < processes; ++k) {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const int first = count * k / processes, last = count * (k + 1) / processes;
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      for (int j = 0; j < k; ++j) {  // the other children's pipes are not this child's
        std::fclose(children[static_cast<size_t>(j)].fromChild);
        std::fclose(children[static_cast<size_t>(j)].toChild);
      }
      close(up[0]);
      close(down[1]);
      runChild(options, count, runId, first, last, up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    children[static_cast<size_t>(k)].pid = pid;
    children[static_cast<size_t>(k)].fromChild = fdopen(up[0], "r");
    children[static_cast<size_t>(k)].toChild = fdopen(down[1], "w");
  }
  Outcome whole;
  whole.participants.resize(static_cast<size_t>(count));
  for (Child& child : children) {  // every child connected, or says why not
    const std::optional<std::string> said = readLine(child.fromChild);
    child.connected = said && said->rfind("R ", 0) == 0;
    const std::string failure = !child.connected ? "a child process ended before it connected" : said->substr(2);
    if (whole.failure.empty() && failure != "-") whole.failure = failure;
  }
  whole.cpuAtRelease = sampleCpu(options.cpuOf);
  whole.releasedNs = whole.failure.empty() ? nowNs() : 0;
  for (Child& child : children) {
    if (!child.connected) continue;  // (SIGPIPE is ignored: a child may still die meanwhile)
    std::fprintf(child.toChild, "G %lld\n", static_cast<long long>(whole.releasedNs));
    std::fflush(child.toChild);
  }
  for (Child& child : children) merge(whole, readSlice(child.fromChild, count));
  whole.cpuAtEnd = sampleCpu(options.cpuOf);  // the last slice comes just after its last join
  for (Child& child : children) {             // every slice is in: the children may tear down
    std::fclose(child.toChild);
    std::fclose(child.fromChild);
    const std::string end = childEnd(child.pid);
    if (whole.failure.empty() && !end.empty()) whole.failure = end;
  }
  return whole;
}

// How many processes a run of `count` needs under the open-file limit: on etcd about 8
// descriptors a participant (above), elsewhere the one in-process layout.
int processesFor(const Options& options, int count, std::uint64_t limit) {
  if (options.etcd.empty() || limit < 1024) return 1;
  const std::uint64_t perProcess = (limit - 256) / 8;
  return static_cast<int>((static_cast<std::uint64_t>(count) + perProcess - 1) / perProcess);
}

// ---- one run -----------------------------------------------------------------------------

void report(const Options& options, int count, int rep, bool onEtcd, int processes, const std::string& runId,
            const Outcome& outcome, double serverCpuS) {
  if (outcome.releasedNs == 0) {
    std::printf("{\"participants\":%d,\"rep\":%d,\"ok\":false,\"error\":%s}\n", count, rep,
                jsonString(outcome.failure).c_str());
    std::fflush(stdout);
    return;
  }
  std::int64_t lastReturn = 0;
  std::vector<std::int64_t> joinNs;
  joinNs.reserve(static_cast<size_t>(count));
  for (const auto& p : outcome.participants) {
    lastReturn = std::max(lastReturn, p.joinedNs);
    joinNs.push_back(p.joinedNs - outcome.releasedNs);
  }
  std::sort(joinNs.begin(), joinNs.end());
  const std::string problem = checkResult(outcome.participants, runId, options.localWorldSize);
  const auto& calls = outcome.calls;
  auto sinceRelease = [&](std::int64_t at) {
    return at == 0 ? -1.0 : static_cast<double>(at - outcome.releasedNs) / 1e6;
  };
  std::string opsJson = "{";
  std::uint64_t requests = 0;
  for (int op = 0; op < kOps; ++op) {
    if (calls[static_cast<size_t>(op)] == 0) continue;
    if (opsJson.size() > 1) opsJson += ",";
    char entry[160];
    std::snprintf(entry, sizeof entry, "\"%s\":{\"calls\":%llu,\"total_ms\":%.1f}", kOpNames[static_cast<size_t>(op)],
                  static_cast<unsigned long long>(calls[static_cast<size_t>(op)]),
                  static_cast<double>(outcome.ns[static_cast<size_t>(op)]) / 1e6);
    opsJson += entry;
    requests += calls[static_cast<size_t>(op)];
  }
  opsJson += "}";
  // Requests on the wire, from how TcpStore (torch 2 dialect) makes each call: get and
  // multiGet wait first (WAIT, then GET/MULTI_GET); a wait that times out cancels
  // (CANCEL_WAIT); set, multiSet and the close notice are one-way; the rest one request.
  // (On etcd a call is one or more HTTP requests: reported as store calls only.)
  const std::uint64_t wire = onEtcd ? 0
                                    : calls[kSet] + calls[kCloseNotice] + calls[kMultiSet] + 2 * calls[kGet] +
                                          2 * calls[kMultiGet] + calls[kAdd] + calls[kCompareSet] + calls[kCheck] +
                                          calls[kWait] + 2 * calls[kWaitTimeout] + calls[kOther];
  auto percentileMs = [&](double fraction) {
    size_t index = static_cast<size_t>(fraction * static_cast<double>(joinNs.size() - 1) + 0.5);
    return static_cast<double>(joinNs[std::min(index, joinNs.size() - 1)]) / 1e6;
  };
  std::printf(
      "{\"participants\":%d,\"rep\":%d,\"backend\":\"%s\",\"processes\":%d,\"run_id\":%s,\"ok\":%s,%s"
      "\"local_world_size\":%d,\"connect_s\":%.3f,"
      "\"rendezvous_s\":%.4f,\"join_p50_ms\":%.1f,\"join_p99_ms\":%.1f,"
      "\"phases_ms\":{\"last_slot_described\":%.1f,\"closer_lock\":%.1f,\"closer_multi_get\":%.1f,"
      "\"closer_multi_set\":%.1f,\"complete\":%.1f,\"last_join_returned\":%.1f},"
      "\"store_calls\":%llu,\"wire_requests\":%llu,\"ops\":%s,\"process_cpu_s\":%.3f,\"store_thread_cpu_s\":%.3f,"
      "\"context_switches\":%ld,\"machine_busy_cpu_s\":%.2f,\"watched_cpu_s\":%.2f,"
      "\"poll_ms\":%d}\n",
      count, rep, onEtcd ? "etcd" : "c10d", processes, jsonString(runId).c_str(), problem.empty() ? "true" : "false",
      problem.empty() ? "" : ("\"error\":" + jsonString(problem) + ",").c_str(), options.localWorldSize,
      static_cast<double>(outcome.connectNs) / 1e9, static_cast<double>(lastReturn - outcome.releasedNs) / 1e9,
      percentileMs(0.5), percentileMs(0.99), sinceRelease(outcome.lastSlotDescribedNs),
      sinceRelease(outcome.closerLockNs), static_cast<double>(outcome.closerMultiGetNs) / 1e6,
      static_cast<double>(outcome.closerMultiSetNs) / 1e6, sinceRelease(outcome.completeNs), sinceRelease(lastReturn),
      static_cast<unsigned long long>(requests), static_cast<unsigned long long>(wire), opsJson.c_str(),
      static_cast<double>(outcome.cpuNs) / 1e9, serverCpuS, outcome.contextSwitches,
      outcome.cpuAtEnd.machineBusyS - outcome.cpuAtRelease.machineBusyS,
      outcome.cpuAtEnd.watchedS - outcome.cpuAtRelease.watchedS, options.pollMs);
  std::fflush(stdout);
  if (!problem.empty())
    std::fprintf(stderr, "rendezvous_bench: %d participants, run %d: %s\n", count, rep, problem.c_str());
}

bool runOnce(const Options& options, int port, const pltrun::etcd::EtcdStore* etcd, const ServerCpu& serverCpu,
             int count, int rep, int processes) {
  const std::string runId = "bench-" + std::to_string(count) + "-" + std::to_string(rep) + "-" + randomHex();
  Outcome outcome;
  double serverCpuS = -1.0;
  if (processes > 1) {
    outcome = runAcrossProcesses(options, count, runId, processes);
  } else {
    std::int64_t serverCpuBefore = -1;
    outcome = runSlice(options, port, etcd, count, runId, 0, count, [&](const std::string& failure) -> std::int64_t {
      if (!failure.empty()) return 0;
      serverCpuBefore = serverCpu.read();
      return nowNs();
    });
    if (serverCpuBefore >= 0) serverCpuS = static_cast<double>(serverCpu.read() - serverCpuBefore) / 1e9;
  }
  report(options, count, rep, etcd != nullptr || !options.etcd.empty(), processes, runId, outcome, serverCpuS);
  return outcome.releasedNs != 0 && checkResult(outcome.participants, runId, options.localWorldSize).empty();
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parseOptions(argc, argv);
  spdlog::set_level(spdlog::level::warn);  // no "waiting for nodes" line from thousands of agents
  signal(SIGPIPE, SIG_IGN);                // a child that died is reported, not the parent killed
  const int most = *std::max_element(options.participants.begin(), options.participants.end());
  const std::uint64_t limit = pltrun::rdzv::raiseOpenFileLimit();
  // A client descriptor per participant, and a server one with the store in this process.
  // (On etcd a run is split across processes where one would pass the limit.)
  const std::uint64_t needed = static_cast<std::uint64_t>(most) * (options.port == 0 ? 2 : 1) + 64;
  if (options.etcd.empty() && limit != 0 && limit < needed) {
    std::fprintf(stderr,
                 "rendezvous_bench: the open-file limit is %llu (hard limit included); %d participants need %llu\n",
                 static_cast<unsigned long long>(limit), most, static_cast<unsigned long long>(needed));
    return 1;
  }

  std::unique_ptr<pltrun::test::ServerThread> server;
  int port = options.port;
  ServerCpu serverCpu;
  if (options.etcd.empty() && port == 0) {
    server = std::make_unique<pltrun::test::ServerThread>();
    port = server->port();
    serverCpu.inProcess = server.get();
    server->onServer([] { return pthread_setname_np(pthread_self(), "store-server"); });
  }
  bool ok = true;
  for (int count : options.participants) {
    const int processes = processesFor(options, count, limit);
    // The parent's own EtcdStore (and its lease's threads) only where it runs the
    // participants itself: a parent that forks holds no threads.
    const auto etcd = !options.etcd.empty() && processes == 1 ? makeEtcdStore(options) : nullptr;
    for (int rep = 1; rep <= options.repeat; ++rep)
      ok = runOnce(options, port, etcd.get(), serverCpu, count, rep, processes) && ok;
  }
  return ok ? 0 : 1;
}
