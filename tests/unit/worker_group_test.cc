// One attempt's worker group over fake processes and a clock moved by hand: the root cause,
// stopping the others, the grace period before SIGKILL to the millisecond, stop signals
// and their repetition, the failure stop delay, stop() and kill(), and the drain timeout.
// Signals reach the group through handleSignal, as GroupRunner passes them on.

#include "launcher/group/worker_group.h"

#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "fake_process_runtime.h"
#include "launcher/output/console_writer.h"
#include "launcher/process/orphan_guard.h"

using namespace pltrun;
using namespace std::chrono_literals;
using fake::FakeProcess;
using Kind = GroupOutcome::Kind;
using Signals = std::vector<int>;

namespace {

class GroupFixture {
 protected:
  static GroupSettings settings(std::chrono::milliseconds termTimeout = 30s) {
    GroupSettings settings;
    settings.attempt = 2;
    settings.host = "node7";
    settings.termTimeout = termTimeout;
    return settings;
  }

  void start(int workers, GroupSettings groupSettings = settings()) {
    group = std::make_unique<WorkerGroup>(context, console, guard, std::move(groupSettings), fakes.runtime());
    group->start(fake::workerSpecs(workers), [this] { ++doneCalls; });
    runReady();
  }

  /// Runs every handler that is ready (ends of processes, output, end of file), no more.
  void runReady() {
    do {
      context.restart();
    } while (context.poll() > 0);
  }

  /// Time passes once everything ready now has run.
  void advance(std::chrono::milliseconds delay) {
    runReady();
    fakes.clock.advance(delay);
    runReady();
  }

  FakeProcess& worker(int rank) { return fakes.starter.process(rank); }
  bool done() const { return doneCalls > 0; }

  OrphanGuard guard;  // forks: before the event loop exists
  boost::asio::io_context context;
  ConsoleWriter& console = launcherConsole();
  fake::FakeRuntime fakes;
  std::unique_ptr<WorkerGroup> group;
  int doneCalls = 0;
};

std::vector<int> ranksOf(const std::vector<WorkerFailure>& failures) {
  std::vector<int> ranks;
  for (const WorkerFailure& failure : failures) ranks.push_back(failure.rank);
  return ranks;
}

}  // namespace

TEST_CASE_METHOD(GroupFixture, "worker group: every worker succeeding is a success, done once all have ended",
                 "[worker_group]") {
  start(3);
  REQUIRE(fakes.starter.processes().size() == 3);
  CHECK(worker(2).launch().argv == std::vector<std::string>{"worker", "2"});
  worker(0).exit(0);
  worker(1).exit(0);
  runReady();
  CHECK_FALSE(done());
  worker(2).exit(0);
  runReady();
  CHECK(doneCalls == 1);
  const GroupOutcome outcome = group->outcome();
  CHECK(outcome.kind == Kind::Succeeded);
  CHECK_FALSE(outcome.rootCause);
  CHECK(outcome.others.empty());
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(worker(rank).signals().empty());
    CHECK(worker(rank).signalsAfterEnd() == Signals{SIGKILL});  // the sweep for what a worker left behind
    // Reaped only after that sweep, and never signalled again: its group id may be reused.
    CHECK(worker(rank).reaped());
    CHECK(worker(rank).signalsAfterReap().empty());
  }
  group->handleSignal(SIGTERM);
  runReady();
  for (int rank = 0; rank < 3; ++rank) CHECK(worker(rank).signalsAfterReap().empty());
}

TEST_CASE_METHOD(GroupFixture, "worker group: the first failure is the root cause and the others get SIGTERM",
                 "[worker_group]") {
  std::vector<int> rootCauses;
  std::vector<WorkerFailure> notices;
  GroupSettings groupSettings = settings();
  groupSettings.onRootCause = [&](const WorkerSpec& spec, pid_t, const RootCauseNotice& notice) {
    rootCauses.push_back(spec.rank);
    notices.push_back(notice.failure);
  };
  start(3, groupSettings);
  worker(1).writeStderr("Traceback\nValueError: bad\n");
  worker(1).exit(3);
  worker(2).exit(5);  // ended before it heard of rank 1: a failure, not the root cause
  runReady();
  CHECK(rootCauses == std::vector<int>{1});
  // The notice describes the root cause at once (an elastic agent writes its restart cause).
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].rank == 1);
  CHECK(notices[0].end.exitCode == 3);
  CHECK(notices[0].pid == worker(1).groupId());
  CHECK_FALSE(notices[0].stall);
  CHECK(worker(0).signals() == Signals{SIGTERM});
  CHECK(worker(2).signals().empty());
  REQUIRE(done());
  const GroupOutcome outcome = group->outcome();
  CHECK(outcome.kind == Kind::Failed);
  REQUIRE(outcome.rootCause);
  CHECK(outcome.rootCause->rank == 1);
  CHECK(outcome.rootCause->end.exitCode == 3);
  CHECK(outcome.rootCause->attempt == 2);
  CHECK(outcome.rootCause->host == "node7");
  CHECK(outcome.rootCause->pid == worker(1).groupId());
  CHECK(outcome.rootCause->stderrTail == std::vector<std::string>{"Traceback", "ValueError: bad"});
  // Rank 0 ended by the SIGTERM it was sent: stopped, not failed (docs/EVENTS.md, failure.json).
  REQUIRE(ranksOf(outcome.others) == std::vector<int>{2});
  CHECK(outcome.others[0].end.exitCode == 5);
}

TEST_CASE_METHOD(GroupFixture, "worker group: a worker that fails on its own after being told to stop is listed",
                 "[worker_group]") {
  start(3);
  worker(0).ignoresStopSignals = true;
  worker(1).exit(3);
  runReady();
  REQUIRE(worker(0).signals() == Signals{SIGTERM});
  REQUIRE(worker(2).signals() == Signals{SIGTERM});  // and it dies by it
  worker(0).exit(7);                                 // its own error while stopping, not the signal's
  runReady();
  REQUIRE(done());
  const GroupOutcome outcome = group->outcome();
  REQUIRE(ranksOf(outcome.others) == std::vector<int>{0});
  CHECK(outcome.others[0].end.exitCode == 7);
}

TEST_CASE_METHOD(GroupFixture, "worker group: a worker that ignores SIGTERM gets SIGKILL when the grace period ends",
                 "[worker_group]") {
  start(2, settings(5s));
  worker(1).ignoresStopSignals = true;
  worker(0).exit(1);
  runReady();
  CHECK(worker(1).signals() == Signals{SIGTERM});
  advance(5s - 1ms);
  CHECK(worker(1).signals() == Signals{SIGTERM});
  CHECK(worker(1).running());
  CHECK_FALSE(done());
  advance(1ms);
  CHECK(worker(1).signals() == Signals{SIGTERM, SIGKILL});
  REQUIRE(done());
  const GroupOutcome outcome = group->outcome();
  CHECK(outcome.kind == Kind::Failed);
  CHECK(outcome.rootCause->rank == 0);
  CHECK(outcome.others.empty());  // killed by pltrun's SIGKILL: stopped, not failed
}

TEST_CASE_METHOD(GroupFixture, "worker group: a stop signal is forwarded and the group is interrupted, not failed",
                 "[worker_group]") {
  const int stopSignal = GENERATE(SIGTERM, SIGINT, SIGHUP);
  start(2);
  group->handleSignal(stopSignal);
  runReady();
  CHECK(worker(0).signals() == Signals{stopSignal});
  CHECK(worker(1).signals() == Signals{stopSignal});
  REQUIRE(done());
  const GroupOutcome outcome = group->outcome();
  CHECK(outcome.kind == Kind::Interrupted);
  CHECK(outcome.interruptSignal == stopSignal);
  CHECK_FALSE(outcome.rootCause);
  CHECK(outcome.others.empty());  // ended by the signal forwarded to them
}

TEST_CASE_METHOD(GroupFixture, "worker group: workers that ignore a stop signal get SIGKILL after the grace period",
                 "[worker_group]") {
  start(2);
  worker(0).ignoresStopSignals = true;
  worker(1).ignoresStopSignals = true;
  group->handleSignal(SIGTERM);
  advance(30s - 1ms);
  CHECK(worker(0).signals() == Signals{SIGTERM});
  advance(1ms);
  CHECK(worker(0).signals() == Signals{SIGTERM, SIGKILL});
  CHECK(worker(1).signals() == Signals{SIGTERM, SIGKILL});
  REQUIRE(done());
  CHECK(group->outcome().interruptSignal == SIGTERM);
}

TEST_CASE_METHOD(GroupFixture, "worker group: a repeated stop signal kills at once", "[worker_group]") {
  const int second = GENERATE(SIGINT, SIGTERM);
  start(2);
  worker(0).ignoresStopSignals = true;
  worker(1).ignoresStopSignals = true;
  group->handleSignal(SIGINT);
  runReady();
  CHECK(worker(0).signals() == Signals{SIGINT});
  group->handleSignal(second);
  runReady();
  CHECK(fakes.clock.now() == 0ms);
  CHECK(worker(0).signals() == Signals{SIGINT, SIGKILL});
  CHECK(worker(1).signals() == Signals{SIGINT, SIGKILL});
  REQUIRE(done());
  const GroupOutcome outcome = group->outcome();
  CHECK(outcome.kind == Kind::Interrupted);
  CHECK(outcome.interruptSignal == SIGINT);  // the first one
}

TEST_CASE_METHOD(GroupFixture, "worker group: SIGUSR1 and SIGUSR2 are only forwarded", "[worker_group]") {
  const int userSignal = GENERATE(SIGUSR1, SIGUSR2);
  start(2);
  group->handleSignal(userSignal);
  runReady();
  CHECK(worker(0).signals() == Signals{userSignal});
  advance(60s);
  CHECK(worker(0).signals() == Signals{userSignal});
  CHECK(worker(1).signals() == Signals{userSignal});
  CHECK_FALSE(done());
  worker(0).exit(0);
  worker(1).exit(0);
  runReady();
  REQUIRE(done());
  const GroupOutcome outcome = group->outcome();
  CHECK(outcome.kind == Kind::Succeeded);
  CHECK(outcome.interruptSignal == 0);
}

TEST_CASE_METHOD(GroupFixture, "worker group: a stop signal while stopping after a failure keeps the grace deadline",
                 "[worker_group]") {
  start(2);
  worker(1).ignoresStopSignals = true;
  worker(0).exit(2);
  advance(10s);
  group->handleSignal(SIGINT);
  runReady();
  CHECK(worker(1).signals() == Signals{SIGTERM, SIGINT});
  advance(20s - 1ms);
  CHECK(worker(1).signals() == Signals{SIGTERM, SIGINT});
  advance(1ms);
  CHECK(worker(1).signals() == Signals{SIGTERM, SIGINT, SIGKILL});
  REQUIRE(done());
  const GroupOutcome outcome = group->outcome();
  CHECK(outcome.kind == Kind::Interrupted);
  CHECK(outcome.interruptSignal == SIGINT);
  REQUIRE(outcome.rootCause);
  CHECK(outcome.rootCause->rank == 0);
}

TEST_CASE_METHOD(GroupFixture, "worker group: stopDelayAfterFailure lets the others go on for the delay",
                 "[worker_group]") {
  GroupSettings groupSettings = settings();
  groupSettings.stopDelayAfterFailure = 5s;
  start(2, groupSettings);
  worker(0).exit(4);
  runReady();
  CHECK(worker(1).signals().empty());
  SECTION("then SIGTERM") {
    advance(5s - 1ms);
    CHECK(worker(1).signals().empty());
    advance(1ms);
    CHECK(worker(1).signals() == Signals{SIGTERM});
  }
  SECTION("and one that ends by itself meanwhile is never signalled") {
    advance(4s);
    worker(1).exit(0);
    advance(10s);
    CHECK(worker(1).signals().empty());
  }
  REQUIRE(done());
  CHECK(group->outcome().kind == Kind::Failed);
  CHECK(group->outcome().rootCause->rank == 0);
}

TEST_CASE_METHOD(GroupFixture, "worker group: stop() is SIGTERM then SIGKILL, neither a failure nor an interruption",
                 "[worker_group]") {
  start(2);
  worker(1).ignoresStopSignals = true;
  group->stop();
  group->stop();  // already stopping: no second SIGTERM
  runReady();
  CHECK(worker(0).signals() == Signals{SIGTERM});
  CHECK(worker(1).signals() == Signals{SIGTERM});
  advance(30s - 1ms);
  CHECK(worker(1).signals() == Signals{SIGTERM});
  advance(1ms);
  CHECK(worker(1).signals() == Signals{SIGTERM, SIGKILL});
  REQUIRE(done());
  const GroupOutcome outcome = group->outcome();
  CHECK(outcome.kind == Kind::Succeeded);
  CHECK_FALSE(outcome.rootCause);
  CHECK(outcome.interruptSignal == 0);
  CHECK(outcome.others.empty());  // both ended by what pltrun sent them: stopped, not failed
}

TEST_CASE_METHOD(GroupFixture, "worker group: kill() is SIGKILL at once, with no grace period", "[worker_group]") {
  start(2);
  worker(0).ignoresStopSignals = true;
  group->kill();
  runReady();
  CHECK(worker(0).signals() == Signals{SIGKILL});
  CHECK(worker(1).signals() == Signals{SIGKILL});
  REQUIRE(done());
  CHECK_FALSE(group->outcome().rootCause);
}

TEST_CASE_METHOD(GroupFixture, "worker group: the drain timeout abandons output a stray descendant holds open",
                 "[worker_group]") {
  start(2);
  worker(1).keepsOutputOpen = true;
  worker(0).exit(0);
  worker(1).exit(0);
  runReady();
  CHECK_FALSE(done());
  SECTION("a stop signal meanwhile still counts: the job was interrupted") {
    group->handleSignal(SIGTERM);
    runReady();
    CHECK(worker(0).signalsAfterEnd() == Signals{SIGKILL});  // only the sweep: nothing runs any more
    advance(WorkerGroup::kDrainTimeout);
    REQUIRE(done());
    CHECK(group->outcome().kind == Kind::Interrupted);
  }
  SECTION("after exactly the timeout") {
    advance(WorkerGroup::kDrainTimeout - 1ms);
    CHECK_FALSE(done());
    advance(1ms);
    REQUIRE(done());
    CHECK(doneCalls == 1);
    CHECK(group->outcome().kind == Kind::Succeeded);
  }
}
