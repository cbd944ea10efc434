#include "launcher/elastic_agent.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <random>

#include "launcher/attempt_plan.h"
#include "launcher/console_writer.h"
#include "launcher/event_log.h"
#include "launcher/free_port.h"
#include "launcher/orphan_guard.h"
#include "launcher/rendezvous_host.h"
#include "launcher/run_directory.h"
#include "launcher/supervisor.h"
#include "launcher/worker_group.h"
#include "pltrun/error.h"
#include "pltrun/tcp_store.h"
#include "rendezvous/elastic_rendezvous.h"
#include "rendezvous/round_watcher.h"

namespace pltrun {

namespace {

using rdzv::RoundEnd;
using rdzv::RoundInfo;
using Reason = rdzv::RoundEnd::Reason;

// After a failed job, how long the store's host waits for the other agents to read why.
constexpr std::chrono::milliseconds kFailureExitBarrier{5000};

std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::string randomHex() {
  std::random_device device;
  char text[16];
  snprintf(text, sizeof text, "%08x", device());
  return text;
}

// A stop signal arrived while no worker group was running.
struct Interrupted {};

// How one round ended for this agent: go on with the next, or end with a status.
struct RoundResult {
  bool finished = false;
  int status = 0;
  std::optional<int> expectedNodes;
};

class ElasticAgent {
 public:
  explicit ElasticAgent(const ElasticJob& job);
  int run();

 private:
  RoundResult runRound(const RoundInfo& info);
  RoundResult afterRound(const RoundInfo& info, const RoundEnd& end, bool reportedHere);
  RoundResult stopJob(std::optional<int> round, const std::optional<GroupOutcome>& outcome);
  int endOfClosedJob(const RoundEnd& end);
  NodePlacement placementFor(const RoundInfo& info);
  std::unique_ptr<TcpStore> connectStore() const;
  void pollEvents();
  void watchSignals();
  void runUntil(const std::function<bool()>& done);
  void logRoundEnd(const RoundInfo& info, const RoundEnd& end);
  GroupSettings groupSettings(int round);

  const ElasticJob& job_;
  const RendezvousSettings& settings_;
  const std::string host_;
  const std::string agentId_;
  OrphanGuard guard_;  // before any thread or worker exists
  std::unique_ptr<HostedStore> hosted_;
  TcpStoreOptions storeOptions_;
  std::unique_ptr<TcpStore> store_;
  std::unique_ptr<rdzv::ElasticRendezvous> rendezvous_;
  RunDirectory directory_;
  EventLog events_;
  boost::asio::io_context context_;
  boost::asio::signal_set signals_;
  ConsoleWriter console_;
  WorkerGroup* current_ = nullptr;
  int interruptSignal_ = 0;
};

ElasticAgent::ElasticAgent(const ElasticJob& job)
    : job_(job),
      settings_(job.config.rdzv),
      host_(hostName()),
      agentId_(host_ + ":" + std::to_string(getpid()) + ":" + randomHex()),
      directory_(job.config, job.runId, host_ + "_" + std::to_string(getpid())),
      events_(directory_.keepsLogs() ? std::optional<std::string>((directory_.root() / "events.jsonl").string())
                                     : std::nullopt),
      signals_(context_) {
  hosted_ = hostRendezvousStoreIfOurs(settings_);
  storeOptions_.host = settings_.endpointHost;
  storeOptions_.port = hosted_ ? hosted_->port() : settings_.endpointPort;
  if (storeOptions_.port == 0) {
    throw Error(ErrorCode::InvalidArgument,
                "--rdzv-endpoint " + settings_.endpointHost +
                    ":0: only the agent that hosts the store can pick its port; give the other agents the port the "
                    "host printed");
  }
  storeOptions_.connectTimeout = settings_.readTimeout;
  storeOptions_.timeout = settings_.readTimeout;
  if (hosted_) {
    spdlog::info("rendezvous store for run {} listening on {}:{}", job_.runId, listenAddressFor(settings_.endpointHost),
                 hosted_->port());
  }
  try {
    store_ = connectStore();
  } catch (const Error& error) {
    throw Error(error.code(), std::string(error.what()) +
                                  "; start pltrun on the endpoint's host first (it hosts the store), or check "
                                  "--rdzv-endpoint");
  }

  rdzv::NodeDescriptor self;
  self.agentId = agentId_;
  self.host = host_;
  self.addr = settings_.localAddr;
  if (self.addr.empty()) self.addr = localAddressTowards(settings_.endpointHost, storeOptions_.port);
  if (self.addr.empty()) self.addr = host_;
  self.localWorldSize = job_.layout.workerCount;
  self.rankHint = settings_.nodeRankHint;
  rdzv::ElasticRendezvousOptions options;
  options.runId = job_.runId;
  options.minNodes = settings_.minNodes;
  options.maxNodes = settings_.maxNodes;
  options.joinTimeout = settings_.joinTimeout;
  options.lastCallTimeout = settings_.lastCallTimeout;
  options.closeTimeout = settings_.closeTimeout;
  options.pollInterval = std::min(options.pollInterval, std::max(settings_.lastCallTimeout / 4, std::chrono::milliseconds(10)));
  rendezvous_ = std::make_unique<rdzv::ElasticRendezvous>(*store_, options, self);

  for (int signal : forwardedSignals()) signals_.add(signal);
}

// Stop signals go to the running workers (if any) and stop the job; SIGUSR1/SIGUSR2 are
// only forwarded.
void ElasticAgent::watchSignals() {
  signals_.async_wait([this](boost::system::error_code error, int signal) {
    if (error) return;
    if (current_ != nullptr) current_->handleSignal(signal);
    const bool stop = signal != SIGUSR1 && signal != SIGUSR2;
    if (stop && interruptSignal_ == 0) interruptSignal_ = signal;
    watchSignals();
  });
}

std::unique_ptr<TcpStore> ElasticAgent::connectStore() const { return std::make_unique<TcpStore>(storeOptions_); }

// The signal handler runs whenever the event loop does: while workers run, and between the
// waits of a rendezvous (pollEvents).
void ElasticAgent::pollEvents() {
  context_.restart();
  context_.poll();
  if (interruptSignal_ != 0) throw Interrupted{};
}

void ElasticAgent::runUntil(const std::function<bool()>& done) {
  while (!done()) {
    context_.restart();
    context_.run_one();
  }
}

GroupSettings ElasticAgent::groupSettings(int round) {
  GroupSettings settings;
  settings.attempt = round;
  settings.termTimeout = job_.config.termTimeout;
  settings.host = host_;
  settings.onWorkerStarted = [this, round](const WorkerSpec& spec, pid_t pid) {
    events_.write("worker_started", {{"round", round}, {"rank", spec.rank}, {"local_rank", spec.localRank}, {"pid", pid}});
  };
  settings.onWorkerExited = [this, round](const WorkerSpec& spec, pid_t pid, const ProcessEnd& end) {
    nlohmann::json fields = {{"round", round}, {"rank", spec.rank}, {"local_rank", spec.localRank}, {"pid", pid},
                             {"status", end.shellStatus()}, {"description", end.describe()}};
    if (end.signal != 0) fields["signal"] = end.signal;
    else fields["exit_code"] = end.exitCode;
    events_.write("worker_exited", fields);
  };
  return settings;
}

int ElasticAgent::run() {
  watchSignals();

  spdlog::info("run {}: joining an elastic job of {} node(s) through the store at {}:{} ({} workers here)",
               job_.runId,
               settings_.minNodes == settings_.maxNodes
                   ? std::to_string(settings_.maxNodes)
                   : std::to_string(settings_.minNodes) + " to " + std::to_string(settings_.maxNodes),
               storeOptions_.host, storeOptions_.port, job_.layout.workerCount);
  int lastRound = -1;
  std::optional<int> expectedNodes;
  for (;;) {
    RoundInfo info;
    try {
      info = rendezvous_->join(lastRound, expectedNodes, [this] { pollEvents(); });
    } catch (const rdzv::JobClosed& closed) {
      return endOfClosedJob(closed.end);
    } catch (const Interrupted&) {
      return stopJob(std::nullopt, std::nullopt).status;
    }
    lastRound = info.round;
    const rdzv::NodeAssignment& place = info.assignment;
    spdlog::info("round {}: node rank {} of {} nodes, ranks {}-{} of {}, restart count {}, {} worker failure(s) so far",
                 info.round, place.nodeRank, place.nnodes, place.firstRank,
                 place.firstRank + job_.layout.workerCount - 1, place.worldSize, info.round, info.failures);
    events_.write("rendezvous_complete", {{"round", info.round}, {"node_rank", place.nodeRank}, {"nnodes", place.nnodes},
                                          {"world_size", place.worldSize}, {"first_rank", place.firstRank},
                                          {"restart_count", info.round}, {"failures", info.failures}});
    RoundResult result = runRound(info);
    if (result.finished) {
      events_.write("job_finished", {{"status", result.status}});
      return result.status;
    }
    expectedNodes = result.expectedNodes;
  }
}

NodePlacement ElasticAgent::placementFor(const RoundInfo& info) {
  NodePlacement node;
  node.nodeRank = info.assignment.nodeRank;
  node.nnodes = info.assignment.nnodes;
  node.worldSize = info.assignment.worldSize;
  node.firstRank = info.assignment.firstRank;
  if (job_.config.agentStore) {
    // The workers use the rendezvous store (under torch's /worker/attempt_N prefix).
    node.useAgentStore = true;
    node.masterAddr = settings_.endpointHost;
    node.masterPort = storeOptions_.port;
    return node;
  }
  // torchrun's way: rank 0's worker hosts the store, on a free port of rank 0's node.
  node.masterAddr = info.assignment.rank0Addr;
  const std::string key = rendezvous_->roundKey(info.round, "master_port");
  if (info.assignment.nodeRank == 0) {
    node.masterPort = pickFreePort(node.masterAddr);
    store_->set(key, std::to_string(node.masterPort));
  } else {
    node.masterPort = std::stoi(store_->get(key, settings_.closeTimeout));
  }
  return node;
}

RoundResult ElasticAgent::runRound(const RoundInfo& info) {
  const RunPlan plan{job_.config, job_.inherited, directory_, job_.command, job_.layout, job_.runId, host_, 0};
  const std::vector<WorkerSpec> specs = workerSpecsFor(plan, info.round, placementFor(info));

  std::optional<RoundEnd> ended;
  std::optional<std::string> storeLost;
  bool groupDone = false;
  WorkerGroup group(context_, console_, guard_, groupSettings(info.round));
  current_ = &group;
  group.start(specs, [&] { groupDone = true; });
  GroupOutcome outcome;
  bool reportedHere = false;
  {
    rdzv::RoundWatcherSettings watch;
    watch.keepAliveInterval = settings_.keepAliveInterval;
    watch.keepAliveMaxAttempt = settings_.keepAliveMaxAttempt;
    rdzv::RoundWatcher watcher(
        connectStore(), *rendezvous_, info, watch,
        [&](const RoundEnd& end) {
          boost::asio::post(context_, [&, end] {
            if (!ended) ended = end;
            group.stop();
          });
        },
        [&](const std::string& message) {
          boost::asio::post(context_, [&, message] {
            storeLost = message;
            group.stop();
          });
        });
    runUntil([&] { return groupDone; });
    current_ = nullptr;
    outcome = group.outcome();

    if (interruptSignal_ != 0 || outcome.kind == GroupOutcome::Kind::Interrupted) {
      return stopJob(info.round, outcome);
    }
    if (!ended && !storeLost && outcome.kind == GroupOutcome::Kind::Failed) {
      const WorkerFailure& root = *outcome.rootCause;
      RoundEnd failure;
      failure.host = host_;
      failure.status = root.end.shellStatus();
      failure.message = "rank " + std::to_string(root.rank) + " (local rank " + std::to_string(root.localRank) +
                        ", pid " + std::to_string(root.pid) + ") ended with " + root.end.describe();
      try {
        ended = rendezvous_->reportWorkerFailure(info.round, failure, job_.config.maxRestarts);
      } catch (const Error& error) {
        storeLost = error.what();
      }
      reportedHere = ended && ended->reason == Reason::WorkerFailed && ended->host == host_ &&
                     ended->message == failure.message;
      if (reportedHere && ended->final) {
        std::optional<std::string> jsonPath;
        if (directory_.keepsLogs()) jsonPath = (directory_.root() / "failure.json").string();
        printFailureReport(*outcome.rootCause, outcome.others, jsonPath);
      }
    }
    if (!ended && !storeLost && outcome.kind == GroupOutcome::Kind::Succeeded) {
      spdlog::info("this node's {} workers succeeded; waiting for the other nodes", specs.size());
      try {
        rendezvous_->reportSucceeded(info);
      } catch (const Error& error) {
        storeLost = error.what();
      }
      runUntil([&] { return ended || storeLost || interruptSignal_ != 0; });
      if (interruptSignal_ != 0) return stopJob(info.round, std::nullopt);
    }
  }
  // The watcher's thread has ended: run what it posted while `group` still exists.
  context_.restart();
  context_.poll();
  if (storeLost && !ended) {
    spdlog::error("lost the rendezvous store at {}:{} ({}); the agent that hosted it has ended, so this job cannot go on",
                  storeOptions_.host, storeOptions_.port, *storeLost);
    return RoundResult{true, 1, std::nullopt};
  }
  return afterRound(info, *ended, reportedHere);
}

void ElasticAgent::logRoundEnd(const RoundInfo& info, const RoundEnd& end) {
  nlohmann::json fields = {{"round", info.round}, {"reason", RoundEnd::reasonName(end.reason)}, {"host", end.host},
                           {"message", end.message}};
  if (end.reason == Reason::NodeJoined) events_.write("node_joined", fields);
  if (end.reason == Reason::NodeLost) events_.write("node_left", fields);
  if (!end.final && end.reason != Reason::Succeeded) {
    fields["failures"] = end.failures;
    events_.write("restart", fields);
  }
}

RoundResult ElasticAgent::afterRound(const RoundInfo& info, const RoundEnd& end, bool reportedHere) {
  logRoundEnd(info, end);
  const int nnodes = info.assignment.nnodes;
  if (end.reason == Reason::Succeeded) {
    if (hosted_) {
      rendezvous_->waitForOthersToLeave(info, settings_.closeTimeout);
    } else {
      rendezvous_->leave(info.round);
    }
    spdlog::info("all {} nodes succeeded", nnodes);
    return RoundResult{true, 0, std::nullopt};
  }
  if (end.final) {
    if (!reportedHere) spdlog::error("the job failed: {}", end.describe());
    if (end.reason == Reason::WorkerFailed) {
      spdlog::error("no restart left: {} worker failure(s), --max-restarts {}", end.failures, job_.config.maxRestarts);
    }
    try {
      if (hosted_) {
        rendezvous_->waitForOthersToLeave(info, kFailureExitBarrier);
      } else {
        rendezvous_->leave(info.round);
      }
    } catch (const Error&) {
      // The store's host is gone already; nothing left to tell anyone.
    }
    return RoundResult{true, end.status != 0 ? end.status : 1, std::nullopt};
  }
  int expected = nnodes;
  if (end.reason == Reason::NodeLost) expected = nnodes - 1;
  if (end.reason == Reason::NodeJoined) expected = std::min(nnodes + 1, settings_.maxNodes);
  if (end.reason == Reason::WorkerFailed) {
    spdlog::warn("round {} ended: {}; restarting every node's workers ({} of {} restarts)", info.round,
                 end.describe(), end.failures, job_.config.maxRestarts);
  } else {
    spdlog::warn("round {} ended: {}; re-forming the job", info.round, end.describe());
  }
  return RoundResult{false, 0, expected};
}

// This agent was told to stop: the whole job stops, as torchrun's agents do when one of
// them is interrupted (Ctrl-C on one node ends the job everywhere).
RoundResult ElasticAgent::stopJob(std::optional<int> round, const std::optional<GroupOutcome>& outcome) {
  const int signal = interruptSignal_ != 0 ? interruptSignal_ : (outcome ? outcome->interruptSignal : SIGTERM);
  RoundEnd stopped;
  stopped.reason = Reason::Stopped;
  stopped.host = host_;
  stopped.message = "received " + signalName(signal);
  stopped.status = 128 + signal;
  stopped.final = true;
  try {
    rendezvous_->closeJob(stopped);
    if (round) rendezvous_->endRound(*round, stopped);
  } catch (const Error& error) {
    spdlog::warn("could not tell the other nodes that this job stops: {}", error.what());
  }
  if (outcome && outcome->rootCause) {
    std::optional<std::string> jsonPath;
    if (directory_.keepsLogs()) jsonPath = (directory_.root() / "failure.json").string();
    printFailureReport(*outcome->rootCause, outcome->others, jsonPath);
  }
  spdlog::warn("stopped by {}", signalName(signal));
  events_.write("job_finished", {{"status", 128 + signal}, {"reason", "stopped"}});
  return RoundResult{true, 128 + signal, std::nullopt};
}

int ElasticAgent::endOfClosedJob(const RoundEnd& end) {
  if (end.reason == Reason::Succeeded) {
    spdlog::info("the job has finished already; nothing to do");
    return 0;
  }
  if (end.reason == Reason::TimedOut) {
    spdlog::error("rendezvous timed out: {}; start the missing nodes (pltrun with the same --rdzv-endpoint and "
                  "--rdzv-id), or lower the minimum of --nnodes", end.message);
  } else {
    spdlog::error("the job is over: {}", end.describe());
  }
  events_.write("job_finished", {{"status", end.status != 0 ? end.status : 1}, {"reason", RoundEnd::reasonName(end.reason)}});
  return end.status != 0 ? end.status : 1;
}

}  // namespace

int runElasticAgent(const ElasticJob& job) { return ElasticAgent(job).run(); }

}  // namespace pltrun
