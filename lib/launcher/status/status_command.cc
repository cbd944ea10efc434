#include "launcher/status/status_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>

#include "base/host_port_text.h"
#include "base/seconds_text.h"
#include "base/terminal_text.h"
#include "launcher/command_line/process_inputs.h"
#include "launcher/command_line/rendezvous_flags.h"
#include "launcher/command_line/site_config.h"
#include "launcher/net/etcd_access.h"
#include "launcher/plan/launch_config.h"
#include "launcher/status/heartbeat_tracker.h"
#include "launcher/status/job_keys.h"
#include "pltrun/error.h"
#include "pltrun/tcp_store.h"
#include "rendezvous/elastic/elastic_rendezvous.h"
#include "rendezvous/etcd/etcd_client.h"
#include "rendezvous/store/server/secret_file.h"

namespace pltrun {

namespace {

using namespace std::chrono_literals;

struct StatusOptions {
  std::string endpoint;
  std::string runId = "none";  // torchrun's default, as the agents use it
  std::string rdzvConf;
  std::string backend = "c10d";
  bool json = false;
  bool help = false;
  double watchSeconds = 0;     ///< 0: once
  double timeoutSeconds = 30;  ///< the most one look at the job may take, however slow the store
};

StatusOptions parseStatusFlags(int argc, const char* const* argv) {
  StatusOptions options;
  CLI::App app{"pltrun status: what an elastic job is doing, from its rendezvous store", "pltrun status"};
  app.add_option("--rdzv-endpoint,--rdzv_endpoint", options.endpoint, "the job's rendezvous store, HOST[:PORT]")
      ->required();
  app.add_option("--rdzv-id,--rdzv_id,--run-id", options.runId, "the job's run id (default: none, as the agents')");
  app.add_option("--rdzv-conf,--rdzv_conf", options.rdzvConf,
                 "the agents' settings: secret_file=PATH, read_timeout=SECONDS; etcd: etcd_prefix, protocol, "
                 "cacert, cert, key, user, password_file");
  app.add_option("--rdzv-backend,--rdzv_backend", options.backend,
                 "c10d (the default) or etcd, whose members --rdzv-endpoint then lists");
  app.add_flag("--json", options.json, "schema 1 JSON (docs/STATUS.md) instead of text");
  app.add_option("--timeout", options.timeoutSeconds,
                 "give up on a store that has not told the whole state within SECONDS (default 30)")
      ->check(CLI::Range(0.1, 86400.0));
  app.add_option("--watch", options.watchSeconds, "redraw every SECONDS (default 2) until interrupted")
      ->expected(0, 1)
      ->default_str("2");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    options.help = true;
    return options;
  } catch (const CLI::ParseError& error) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(error.what()) + " (usage: pltrun status --rdzv-endpoint HOST:PORT --rdzv-id ID)");
  }
  if (app.count("--watch") && options.watchSeconds <= 0) options.watchSeconds = 2;
  if (options.backend != "c10d" && options.backend != "etcd") {
    throw Error(ErrorCode::InvalidArgument, "--rdzv-backend '" + options.backend +
                                                "' has no rendezvous to read: expected c10d or etcd, as the agents of "
                                                "the job were started with");
  }
  return options;
}

// The rendezvous settings status shares with the agents: the secret, the read timeout and,
// for etcd, the members, TLS files, credentials and key prefix.
RendezvousSettings settingsFor(const StatusOptions& options, const Environment& env) {
  RendezvousSettings settings;
  // The agents' --rdzv-conf, else the site file's (its secret_file, its etcd TLS files).
  std::optional<std::string> conf = options.rdzvConf;
  if (conf->empty()) conf = siteConfigValue("rdzv-conf", env, readOwnFileFromDisk, fileExistsOnDisk);
  if (conf && !conf->empty()) applyRendezvousConf(*conf, settings);
  applySecretFileDefault(env, settings);
  return settings;
}

// Where the job's keys are read, and its name in messages.
struct JobSource {
  std::string endpoint;  ///< as the summary line shows it
  std::string name;      ///< "the store at HOST:PORT", "etcd at HOST:PORT,..."
  std::string lostHint;  ///< what it means when it stops answering
  JobKeyReader read;
  JobKeysReader readMany;
  std::unique_ptr<TcpStore> store;
  std::unique_ptr<etcd::EtcdClient> etcd;
};

// c10d: the TCPStore at the endpoint (an agent's, or pltrun-store), with the job's secret.
JobSource openTcpStore(const StatusOptions& options, const RendezvousSettings& settings) {
  const Endpoint endpoint = parseEndpoint("--rdzv-endpoint", options.endpoint, kDefaultRendezvousPort);
  TcpStoreOptions storeOptions;
  storeOptions.host = endpoint.host;
  storeOptions.port = endpoint.port;
  storeOptions.secret = settings.secretFile.empty() ? "" : rdzv::readSecretFile(settings.secretFile, "secret_file");
  storeOptions.authContext = options.runId;
  storeOptions.connectTimeout = 3s;
  storeOptions.timeout = std::min(settings.readTimeout, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                            std::chrono::duration<double>(options.timeoutSeconds)));
  JobSource source;
  source.endpoint = hostPortText(endpoint.host, endpoint.port);
  source.name = "the store at " + source.endpoint;
  source.lostHint = "the job has ended, or its first node is gone";
  try {
    source.store = std::make_unique<TcpStore>(storeOptions);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::PermissionDenied) {
      throw Error(ErrorCode::PermissionDenied, "the store at " + source.endpoint +
                                                   " refused us: give the job's secret (--rdzv-conf secret_file=PATH "
                                                   "or PLTRUN_SECRET_FILE) and its run id (--rdzv-id)");
    }
    throw Error(ErrorCode::Network, "nothing answers at " + source.endpoint +
                                        ": the job has ended (its store went with its first node) or the endpoint is "
                                        "wrong");
  }
  source.read = storeKeyReader(*source.store, options.runId);
  source.readMany = storeKeysReader(*source.store, options.runId);
  return source;
}

// etcd: a plain client of the members (no lease: reading the job must not change it).
JobSource openEtcd(const StatusOptions& options, RendezvousSettings settings) {
  settings.etcd.members = parseEtcdMembers("--rdzv-endpoint", options.endpoint);
  JobSource source;
  source.endpoint = etcdMembersText(settings.etcd);
  source.name = "etcd at " + source.endpoint;
  source.lostHint = "check that a quorum of the members runs, and the TLS files and credentials in --rdzv-conf";
  source.etcd = std::make_unique<etcd::EtcdClient>(etcdClientOptions(settings));
  const std::string prefix = settings.etcd.prefix + rdzv::jobKeyPrefix(options.runId);
  source.read = [client = source.etcd.get(), prefix](const std::string& name) -> std::optional<std::string> {
    std::optional<etcd::KeyValue> found = client->get(prefix + name);
    if (!found) return std::nullopt;
    return etcd::storedValue(*found);  // a counter reads as its count
  };
  // A poll of the heartbeats: one range request for the keys under the prefix they share
  // (readHeartbeats asks for "rR/beat/1", "rR/beat/2", ...).
  source.readMany = [client = source.etcd.get(), prefix](const std::vector<std::string>& names) {
    JobKeys keys;
    if (names.empty()) return keys;
    const std::string common = names.front().substr(0, names.front().rfind('/') + 1);  // "rR/beat/"
    const std::set<std::string> wanted(names.begin(), names.end());
    for (const etcd::KeyValue& kv : client->getPrefix(prefix + common).kvs) {
      const std::string name = kv.key.substr(prefix.size());
      if (wanted.count(name) != 0) keys[name] = etcd::storedValue(kv);
    }
    return keys;
  };
  source.read("round");  // the first request finds a member that answers, or names every member tried
  return source;
}

// A store that answers every request, slowly, must not keep status going: each read first
// checks the deadline of the whole look.
template <typename Reader>
Reader untilDeadline(Reader read, HeartbeatTracker::Clock::time_point deadline, double seconds) {
  return [read = std::move(read), deadline, seconds](const auto& names) {
    if (HeartbeatTracker::Clock::now() >= deadline) {
      throw Error(ErrorCode::Timeout,
                  "no whole answer within " + secondsText(std::chrono::duration<double>(seconds)) + " s (--timeout)");
    }
    return read(names);
  };
}

// Reads the job, then watches the heartbeats of a running round for up to 1.6 keep-alive
// intervals (or until every node has beaten once): the counters hold no time. The interval
// is the descriptors' word, so it is held to 0.1-60 s.
JobStatus sample(const JobSource& source, const StatusOptions& options, HeartbeatTracker& tracker) {
  const auto until = HeartbeatTracker::Clock::now() + std::chrono::duration_cast<HeartbeatTracker::Clock::duration>(
                                                          std::chrono::duration<double>(options.timeoutSeconds));
  const JobKeyReader read = untilDeadline(source.read, until, options.timeoutSeconds);
  const JobKeysReader readMany = untilDeadline(source.readMany, until, options.timeoutSeconds);
  JobKeys keys = readJobKeys(read);
  JobStatus status = evaluateJob(options.runId, source.endpoint, keys, {});
  if (status.state != JobStatus::State::Running) return status;
  const int slots = status.joined;
  const int keepAliveMs = std::clamp(status.keepAliveMs.value_or(5000), 100, 60000);
  // The watch leaves a quarter of --timeout for the reads after it.
  const auto deadline = std::min(HeartbeatTracker::Clock::now() + std::chrono::milliseconds(keepAliveMs * 16 / 10),
                                 until - std::chrono::duration_cast<HeartbeatTracker::Clock::duration>(
                                             std::chrono::duration<double>(options.timeoutSeconds / 4)));
  tracker.observe(status.round, readHeartbeats(readMany, status.round, slots), HeartbeatTracker::Clock::now());
  while (!tracker.allMoved(status.round, slots) && HeartbeatTracker::Clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
    tracker.observe(status.round, readHeartbeats(readMany, status.round, slots), HeartbeatTracker::Clock::now());
  }
  keys = readJobKeys(read);  // what changed meanwhile (a failure, the end)
  JobStatus now = evaluateJob(options.runId, source.endpoint, keys, {});
  // The ages measured belong to the round watched; a round formed meanwhile has none yet.
  if (now.round != status.round) return now;
  return evaluateJob(options.runId, source.endpoint, keys, tracker.ages(status.round, HeartbeatTracker::Clock::now()));
}

void show(const JobStatus& status, const StatusOptions& options, bool redraw) {
  // Host names and messages come from the store. renderStatusText shows each within its line;
  // the JSON is ASCII, every control and non-ASCII character \u-escaped, so that it cannot
  // drive a terminal it is printed on either.
  std::string text = options.json
                         ? statusJson(status).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) + "\n"
                         : terminalSafe(renderStatusText(status));
  if (redraw && isatty(STDOUT_FILENO)) text = "\033[H\033[2J" + text;
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

bool isStatusCommand(int argc, const char* const* argv) { return argc > 1 && std::strcmp(argv[1], "status") == 0; }

namespace {

int reportStatus(int argc, const char* const* argv, const Environment& env) {
  const StatusOptions options = parseStatusFlags(argc - 1, argv + 1);
  if (options.help) return 0;
  const RendezvousSettings settings = settingsFor(options, env);
  const JobSource source = options.backend == "etcd" ? openEtcd(options, settings) : openTcpStore(options, settings);
  HeartbeatTracker tracker;
  while (true) {
    JobStatus status;
    try {
      status = sample(source, options, tracker);
    } catch (const Error& error) {
      throw Error(ErrorCode::Network, source.name + " stopped answering (" + error.what() + "): " + source.lostHint);
    }
    show(status, options, options.watchSeconds > 0);
    if (options.watchSeconds <= 0 || status.state == JobStatus::State::Finished) return statusExitCode(status);
    std::this_thread::sleep_for(std::chrono::duration<double>(options.watchSeconds));
  }
}

}  // namespace

int runStatusCommand(int argc, const char* const* argv, const Environment& env) {
  try {
    return reportStatus(argc, argv, env);
  } catch (const Error& error) {
    // Every way of not knowing the job's state is "unknown": 2, as a failed job.
    // The error may quote what a store or an etcd member answered: one line all the same.
    std::fprintf(stderr, "pltrun status: error: %s\n", terminalSafeLine(error.what()).c_str());
    return 2;
  }
}

}  // namespace pltrun
