#pragma once
// Elastic jobs of real pltrun agents on one machine, for the end-to-end tests: the agents of
// one job (meeting at the store the first hosts on a free port and prints, or at an etcd
// cluster the test started), the records the test worker's `serve` mode writes per round,
// and the checks that no worker is left.

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/json_lines.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

using namespace std::chrono_literals;
using nlohmann::json;

// Short rendezvous timings so rounds form, and fail, within seconds; join_timeout stays long
// enough for agents started one after the other on a loaded 2-core machine.
inline const std::string kConf = "last_call_timeout=1,join_timeout=30,keep_alive_interval=1,keep_alive_max_attempt=3";
inline constexpr auto kAgentExit = 40s;   // how long an agent may take to finish once released
inline constexpr auto kRoundForms = 30s;  // how long a round may take to form and start its workers

// The agents of one job, all started with the same flags; the first hosts the store.
class ElasticJob {
 public:
  ElasticJob(const TempDir& dir, std::string nnodes, std::string runId, std::vector<std::string> flags,
             std::vector<std::string> program, std::string conf = kConf)
      : dir_(dir),
        nnodes_(std::move(nnodes)),
        runId_(std::move(runId)),
        flags_(std::move(flags)),
        program_(std::move(program)),
        conf_(std::move(conf)) {}

  /// The agents meet at the etcd members `endpoints` ("HOST:PORT,...") instead.
  void meetAtEtcd(const std::string& endpoints) { etcd_ = endpoints; }
  bool onEtcd() const { return !etcd_.empty(); }

  /// Starts one more agent: with c10d the first hosts the store on a free port, the others
  /// join it. `wrapper` goes before pltrun (e.g. `ip netns exec NS`); `host` is the c10d
  /// endpoint's host; `ownFlags` are this agent's only (after the job's flags).
  ChildProcess& start(const std::vector<std::string>& wrapper = {}, const std::string& host = "127.0.0.1",
                      const std::vector<std::string>& ownFlags = {}) {
    std::vector<std::string> argv = wrapper;
    argv.push_back(PLTRUN_BINARY);
    std::vector<std::string> args = {"--nnodes",  nnodes_,       "--nproc-per-node", "2",
                                     "--rdzv-id", runId_,        "--rdzv-conf",      conf_,
                                     "--log-dir", dir_ / "logs", "--term-timeout",   "5"};
    if (onEtcd()) {
      args.insert(args.end(), {"--rdzv-backend", "etcd", "--rdzv-endpoint", etcd_});
    } else {
      args.insert(args.end(), {"--rdzv-endpoint", host + ":" + std::to_string(port_)});
    }
    args.insert(args.end(), flags_.begin(), flags_.end());
    args.insert(args.end(), ownFlags.begin(), ownFlags.end());
    args.insert(args.end(), program_.begin(), program_.end());
    argv.insert(argv.end(), args.begin(), args.end());
    // A killed agent cannot remove its temporary directory: keep those inside the test's.
    agents_.push_back(std::make_unique<ChildProcess>(argv, std::vector<std::string>{"TMPDIR=" + dir_.path()}));
    ChildProcess& agent = *agents_.back();
    if (port_ == 0 && !onEtcd()) port_ = storePort(agent);
    return agent;
  }

  int port() const { return port_; }
  ChildProcess& agent(size_t index) { return *agents_.at(index); }
  size_t size() const { return agents_.size(); }
  const std::string& runId() const { return runId_; }

  /// Waits for every agent still running to exit.
  std::vector<Finished> waitAll(std::chrono::milliseconds timeout = kAgentExit) {
    std::vector<Finished> results;
    for (auto& agent : agents_) results.push_back(agent->wait(timeout));
    return results;
  }

 private:
  int storePort(const ChildProcess& host) const {
    const int port = rendezvousStorePort(host, 20s);
    if (port == 0) {
      INFO("the first agent's stderr: " << host.stderrSoFar());
      FAIL("the first agent never printed its store's port");
    }
    return port;
  }

  const TempDir& dir_;
  std::string nnodes_;
  std::string runId_;
  std::vector<std::string> flags_;
  std::vector<std::string> program_;
  std::string conf_;
  std::string etcd_;
  int port_ = 0;
  std::vector<std::unique_ptr<ChildProcess>> agents_;
};

// One worker of one round, as `serve` recorded it.
struct WorkerRecord {
  int rank = -1;
  int restart = -1;
  json env;
  pid_t pid() const { return env.at("pid").get<pid_t>(); }
  pid_t ppid() const { return env.at("ppid").get<pid_t>(); }
  long long startedNs() const { return env.at("started_ns").get<long long>(); }
  std::string var(const std::string& name) const { return env.value(name, std::string("<unset>")); }
};

inline std::vector<WorkerRecord> readRecords(const TempDir& dir) {
  static const std::regex name("env_([0-9]+)_([0-9]+)\\.json");
  std::vector<WorkerRecord> records;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    std::smatch match;
    const std::string file = entry.path().filename().string();
    if (!std::regex_match(file, match, name)) continue;
    WorkerRecord record;
    record.rank = std::stoi(match[1].str());
    record.restart = std::stoi(match[2].str());
    record.env = json::parse(readFile(entry.path().string()));  // written whole, by rename
    records.push_back(std::move(record));
  }
  return records;
}

// One round in which every rank of a world of `world` workers started.
struct Round {
  int restart = -1;
  std::map<int, WorkerRecord> byRank;
};

inline std::optional<Round> findRound(const std::vector<WorkerRecord>& records, int world, int fromRestart) {
  std::map<int, Round> rounds;
  for (const auto& record : records) {
    if (record.restart < fromRestart || record.var("WORLD_SIZE") != std::to_string(world)) continue;
    rounds[record.restart].restart = record.restart;
    rounds[record.restart].byRank[record.rank] = record;
  }
  for (auto it = rounds.rbegin(); it != rounds.rend(); ++it) {  // the latest complete one
    const Round& round = it->second;
    if (round.byRank.size() == static_cast<size_t>(world) && round.byRank.begin()->first == 0 &&
        round.byRank.rbegin()->first == world - 1) {
      return round;
    }
  }
  return std::nullopt;
}

// Waits until a round (restart count >= fromRestart) has all `world` ranks running.
inline Round waitForRound(const TempDir& dir, int world, int fromRestart,
                          std::chrono::milliseconds timeout = kRoundForms) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<WorkerRecord> records;
  while (true) {
    records = readRecords(dir);
    if (auto round = findRound(records, world, fromRestart)) return *round;
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(10ms);
  }
  std::string seen;
  for (const auto& record : records) {
    seen += " rank " + std::to_string(record.rank) + "/round " + std::to_string(record.restart) + "/world " +
            record.var("WORLD_SIZE") + ";";
  }
  INFO("workers seen:" << seen);
  FAIL("no round with all " << world << " ranks from restart count " << fromRestart << " on");
  return {};
}

// A standalone pltrun-store on a free loopback port (its first line on stdout is "listening
// on ADDR:PORT"); its endpoint once it listens. SIGTERMed and reaped at the end.
class StandaloneStore {
 public:
  explicit StandaloneStore(const TempDir& dir, const std::vector<std::string>& extra = {})
      : dir_(dir), process_(command(extra), {}, dir / "store.out") {
    for (int attempt = 0; attempt < 200 && endpoint_.empty(); ++attempt) {
      std::smatch match;
      const std::string out = readFile(dir_ / "store.out");
      if (std::regex_search(out, match, std::regex("listening on 127\\.0\\.0\\.1:(\\d+)"))) {
        endpoint_ = "127.0.0.1:" + match[1].str();
      }
      if (endpoint_.empty()) std::this_thread::sleep_for(50ms);
    }
    REQUIRE_FALSE(endpoint_.empty());
  }
  ~StandaloneStore() {
    process_.signal(SIGTERM);
    process_.wait(10s);
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  static std::vector<std::string> command(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {PLTRUN_STORE_BINARY, "--host", "127.0.0.1", "--port", "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  const TempDir& dir_;
  ChildProcess process_;
  std::string endpoint_;
};

inline void release(const TempDir& dir) { std::ofstream(dir / "release") << "1"; }

inline long long monotonicNanoseconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

// Every worker pid any mode recorded in `dir`: env_*.json ("pid") and ready_* files.
inline std::vector<pid_t> recordedWorkerPids(const TempDir& dir) {
  std::vector<pid_t> pids;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path(), error)) {
    const std::string file = entry.path().filename().string();
    try {
      if (file.rfind("env_", 0) == 0 && entry.path().extension() == ".json") {
        pids.push_back(json::parse(readFile(entry.path().string())).at("pid").get<pid_t>());
      } else if (file.rfind("ready_", 0) == 0) {
        pids.push_back(std::stoi(readFile(entry.path().string())));
      }
    } catch (const std::exception&) {
      // Still being written (the `env` and `signals` modes do not rename): not a pid yet.
    }
  }
  return pids;
}

// Kills, when the test ends, any recorded worker that is somehow still alive (a failed test
// must not leave workers behind); it checks the command line so a reused pid is spared.
class WorkerSweeper {
 public:
  explicit WorkerSweeper(const TempDir& dir) : dir_(dir) {}
  ~WorkerSweeper() {
    for (pid_t pid : recordedWorkerPids(dir_)) {
      if (processGone(pid)) continue;
      try {
        if (readFile("/proc/" + std::to_string(pid) + "/cmdline").find("pltrun_test_worker") == std::string::npos) {
          continue;
        }
      } catch (const std::exception&) {
        continue;  // it ended between the two looks (a destructor must not throw: CI saw terminate)
      }
      kill(pid, SIGKILL);
    }
  }

 private:
  const TempDir& dir_;
};

// Checks that no worker the test recorded is still running (a generous wait: killed process
// groups take a moment to go on a loaded machine).
inline void checkNoWorkerLeft(const TempDir& dir) {
  std::vector<pid_t> pids = recordedWorkerPids(dir);
  std::vector<pid_t> alive = waitUntilGone(pids, 10s);
  std::string described;
  for (pid_t pid : alive)
    described += " " + std::to_string(pid) + ": " + readFile("/proc/" + std::to_string(pid) + "/stat");
  INFO(alive.size() << " of " << pids.size() << " workers still alive:" << described);
  CHECK(alive.empty());
}

// The JSON lines an agent wrote to LOG_DIR/RUN_ID/HOST_PID/events.jsonl.
inline std::vector<json> agentEvents(const TempDir& dir, const std::string& runId, pid_t agent) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string path = dir / ("logs/" + runId + "/" + host + "_" + std::to_string(agent) + "/events.jsonl");
  std::vector<json> events = readJsonLines(path);
  INFO("events of agent " << agent << " (" << path << "): " << events.size());
  CHECK(!events.empty());
  return events;
}

// The events of one kind ("event": NAME).
inline std::vector<json> eventsNamed(const std::vector<json>& events, const std::string& name) {
  std::vector<json> found;
  for (const auto& event : events) {
    if (event.value("event", std::string()) == name) found.push_back(event);
  }
  return found;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::string describe(const std::vector<Finished>& results) {
  std::string text;
  for (size_t index = 0; index < results.size(); ++index) {
    text += "\n--- agent " + std::to_string(index) + ": status " + std::to_string(results[index].status) +
            (results[index].timedOut ? " (timed out)" : "") + "\n" + results[index].err;
  }
  return text;
}

}  // namespace pltrun::test
