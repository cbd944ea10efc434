// A console that stops reading (a paused `| less`, Ctrl-S, `| sleep`) must not stall pltrun:
// the workers block on their pipes (backpressure, nothing dropped) while signals, timers
// and the workers' store go on. A console that goes away (`| head -1`) ends console output
// only: the job runs to its end and the log files get everything.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"
#include "pltrun/tcp_store.h"

extern char** environ;

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

// pltrun with stdout on a pipe the test reads only when asked to, stderr to a file.
class PipedPltrun {
 public:
  PipedPltrun(const std::vector<std::string>& args, const std::string& stderrPath) {
    int ends[2];
    REQUIRE(pipe2(ends, O_CLOEXEC) == 0);
    readEnd_ = ends[0];
    std::vector<std::string> argv = pltrunCommand(args);
    std::vector<char*> pointers;
    for (auto& arg : argv) pointers.push_back(arg.data());
    pointers.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, ends[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, stderrPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int error = posix_spawn(&pid_, pointers[0], &actions, nullptr, pointers.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(ends[1]);
    REQUIRE(error == 0);
  }
  ~PipedPltrun() {
    if (pid_ > 0 && status_ < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    closeConsole();
  }
  pid_t pid() const { return pid_; }
  /// Reads up to the first newline of pltrun's stdout.
  std::string readLine() {
    std::string line;
    char c = 0;
    while (read(readEnd_, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }
  /// The reader goes away, as `head -1` does.
  void closeConsole() {
    if (readEnd_ >= 0) close(readEnd_);
    readEnd_ = -1;
  }
  /// pltrun's status (128 + signal when killed), or -1 if it ran past `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int raw = 0;
      if (waitpid(pid_, &raw, WNOHANG) == pid_) {
        status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
        return status_;
      }
      std::this_thread::sleep_for(10ms);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int readEnd_ = -1;
  int status_ = -1;
};

}  // namespace

TEST_CASE("a console that stops reading stalls neither signals nor the workers' store", "[output][console]") {
  TempDir dir;
  // Each worker writes its store port, then floods stdout far past any pipe or buffer.
  PipedPltrun pltrun({"--nproc-per-node", "2", "--term-timeout", "2", "/bin/sh", "-c",
                      "echo $MASTER_PORT > " + dir.path() + "/port_$RANK; exec " + testWorker() + " flood 1000000000"},
                     dir / "stderr");
  REQUIRE(waitForFile(dir / "port_0", 20s));
  std::this_thread::sleep_for(1500ms);  // the pipe and the console's queue fill; nobody reads

  pltrun::TcpStoreOptions options;
  options.port = std::stoi(readFile(dir / "port_0"));
  options.connectTimeout = 2s;
  options.timeout = 2s;
  const auto pingStarted = std::chrono::steady_clock::now();
  pltrun::TcpStore store(options);
  store.ping();  // on a loop blocked in write(), no answer would come
  CHECK(std::chrono::steady_clock::now() - pingStarted < 2s);

  const auto stopped = std::chrono::steady_clock::now();
  REQUIRE(kill(pltrun.pid(), SIGTERM) == 0);
  const int status = pltrun.wait(20s);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  INFO("stderr: " << readFile(dir / "stderr"));
  CHECK(status == 128 + SIGTERM);
  WARN("SIGTERM with a stalled console: pltrun gone after " << seconds << " s (--term-timeout 2)");
  CHECK(seconds < 2 + 1 + 2.0);  // the grace period, the final drain's second, and room for a loaded machine
}

TEST_CASE("a console that goes away ends console output only, and the job and its logs go on", "[output][console]") {
  TempDir dir;
  PipedPltrun pltrun({"--log-dir", dir / "logs", "--rdzv-id", "gone", testWorker(), "flood", "10000000"},
                     dir / "stderr");
  CHECK(!pltrun.readLine().empty());
  pltrun.closeConsole();  // `| head -1`
  const int status = pltrun.wait(60s);
  INFO("stderr: " << readFile(dir / "stderr"));
  CHECK(status == 0);
  CHECK(std::filesystem::file_size(dir / "logs/gone/attempt_0/0/stdout.log") >= 10000000);
}
