// The single-node supervisor over fake processes: restarts up to --max-restarts, the root
// cause's own status, 0 after a success on a restart, 128 + the signal when stopped. Each
// test scripts its workers as they start (fake::FakeProcessStarter::onStart); the stop
// signal is a real one sent to this process, which the supervisor's GroupRunner catches.

#include "launcher/static_job/supervisor.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "fake_process_runtime.h"
#include "launcher/process/orphan_guard.h"

using namespace pltrun;
using namespace std::chrono_literals;
using fake::FakeProcess;

namespace {

constexpr int kWorkers = 2;

class SupervisorFixture {
 protected:
  int run(int maxRestarts) {
    SupervisorOptions options;
    options.maxRestarts = maxRestarts;
    options.host = "node7";
    Supervisor supervisor(context, options, guard, fakes.runtime());
    return supervisor.run([this](int attempt) {
      attempts.push_back(attempt);
      return fake::workerSpecs(kWorkers);
    });
  }

  /// Runs `action` from the supervisor's event loop, once the attempt has started.
  void later(std::function<void()> action) { boost::asio::post(context, std::move(action)); }

  /// `rank` of every attempt ends as `end` says; the others run until they are stopped.
  void failRank(int rank, ProcessEnd end) {
    fakes.starter.onStart = [this, rank, end](FakeProcess& process) {
      if (fake::rankOf(process) == rank) later([&process, end] { process.endWith(end); });
    };
  }

  OrphanGuard guard;  // forks: before the event loop exists
  boost::asio::io_context context;
  fake::FakeRuntime fakes;
  std::vector<int> attempts;  ///< the attempts the supervisor planned, in order
};

}  // namespace

TEST_CASE_METHOD(SupervisorFixture, "supervisor: restarts up to --max-restarts, then returns the root cause's code",
                 "[supervisor]") {
  failRank(1, ProcessEnd{3, 0});
  CHECK(run(2) == 3);
  CHECK(attempts == std::vector<int>{0, 1, 2});
  REQUIRE(fakes.starter.processes().size() == 3 * kWorkers);
  for (const auto& process : fakes.starter.processes()) {
    if (fake::rankOf(*process) == 0) CHECK(process->signals() == std::vector<int>{SIGTERM});
  }
}

TEST_CASE_METHOD(SupervisorFixture, "supervisor: a root cause killed by a signal gives 128 + the signal",
                 "[supervisor]") {
  failRank(0, ProcessEnd{0, SIGSEGV});
  CHECK(run(0) == 128 + SIGSEGV);
  CHECK(attempts == std::vector<int>{0});
}

TEST_CASE_METHOD(SupervisorFixture, "supervisor: a success on a restart returns 0", "[supervisor]") {
  fakes.starter.onStart = [this](FakeProcess& process) {
    const bool firstAttempt = attempts.back() == 0;
    const bool failing = firstAttempt && fake::rankOf(process) == 0;
    later([&process, failing] { process.exit(failing ? 1 : 0); });
  };
  CHECK(run(3) == 0);
  CHECK(attempts == std::vector<int>{0, 1});
  CHECK(fakes.starter.processes().size() == 2 * kWorkers);
}

TEST_CASE_METHOD(SupervisorFixture, "supervisor: a stop signal ends the job with 128 + the signal, no restart",
                 "[supervisor]") {
  const int stopSignal = GENERATE(SIGTERM, SIGINT);
  fakes.starter.onStart = [this, stopSignal](FakeProcess& process) {
    // Delivered to the supervisor's signal set before kill() returns, handled in its loop.
    if (fake::rankOf(process) == kWorkers - 1) later([stopSignal] { ::kill(getpid(), stopSignal); });
  };
  CHECK(run(3) == 128 + stopSignal);
  CHECK(attempts == std::vector<int>{0});
  for (const auto& process : fakes.starter.processes()) CHECK(process->signals() == std::vector<int>{stopSignal});
}
