// Started with too few file descriptors, pltrun-store and pltrun say so in one line, with
// what to do: whichever descriptor they fail to get first (the event loop's epoll, the
// signal pipe, a listener, a pipe), never "internal error: epoll: Too many open files" nor
// an uncaught exception's abort. Run under prlimit with each limit from 3 to 24.

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "helpers/child_process.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

// The last line of `text` (a progress line may come before the error: "starting 1 worker").
std::string lastLine(const std::string& text) {
  const size_t end = text.size() > 1 ? text.rfind('\n', text.size() - 2) : std::string::npos;
  return end == std::string::npos ? text : text.substr(end + 1);
}

// Runs `argv` with an open-file limit of `limit` (soft and hard) for each limit from 3 to
// 24; checks what each failed start printed, and returns how many failed.
int checkStartsWithFewDescriptors(const std::vector<std::string>& argv) {
  int failed = 0;
  for (int limit = 3; limit <= 24; ++limit) {
    const std::string nofile = std::to_string(limit);
    std::vector<std::string> command{"/usr/bin/prlimit", "--nofile=" + nofile + ":" + nofile};
    command.insert(command.end(), argv.begin(), argv.end());
    Finished run = ChildProcess(command).wait(20s);
    if (run.status == 0 || run.status == 124 || run.timedOut) continue;  // started (124: stopped by timeout)
    // Too few for prlimit, or for the dynamic loader, to start the program at all.
    if (run.err.find("prlimit:") != std::string::npos || run.status == 127) continue;
    ++failed;
    INFO("open-file limit " << limit << ", status " << run.status << ", stderr: " << run.err);
    const std::string last = lastLine(run.err);
    CHECK((last.find("out of file descriptors") != std::string::npos ||
           last.find("Too many open files") != std::string::npos));
    CHECK(last.find("ulimit -n") != std::string::npos);
    CHECK(last.find("error: ") != std::string::npos);
    CHECK(run.err.find("internal error") == std::string::npos);
    CHECK(run.err.find("terminate called") == std::string::npos);
  }
  return failed;
}

}  // namespace

TEST_CASE("pltrun-store started out of file descriptors says so in one line, with what to do", "[store][descriptors]") {
  // The store runs until stopped: a short timeout ends the starts that succeed.
  CHECK(checkStartsWithFewDescriptors({"/usr/bin/timeout", "2", PLTRUN_STORE_BINARY, "--port", "0"}) > 0);
}

TEST_CASE("pltrun started out of file descriptors says so in one line, with what to do", "[store][descriptors]") {
  CHECK(checkStartsWithFewDescriptors({PLTRUN_BINARY, "--nproc-per-node", "1", "--no-python", "/bin/true"}) > 0);
}
