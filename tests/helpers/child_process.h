#pragma once
// Test-side process handling: start a real program with captured output, signal it, reap
// it with a deadline, and check that processes are gone. Used by the end-to-end tests to
// drive the real pltrun binary.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pltrun::test {

struct Finished {
  int status = -1;  ///< exit code, or 128 + signal
  bool timedOut = false;
  std::string out;  ///< stdout (empty when it went to a file)
  std::string err;
};

class ChildProcess {
 public:
  /// Starts argv[0] (a path) with the test's environment changed by `extraEnv`: "KEY=VALUE"
  /// sets, "KEY" alone removes.
  /// When `stdoutPath` is set, stdout goes to that file instead of memory.
  explicit ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extraEnv = {},
                        const std::string& stdoutPath = "");
  ~ChildProcess();  ///< kills (SIGKILL) and reaps the process if the test did not wait

  pid_t pid() const { return pid_; }
  void signal(int signal) const;
  /// Waits for exit and end of output; after `timeout` kills it and sets timedOut.
  Finished wait(std::chrono::milliseconds timeout);
  /// What the process has written to stderr so far (safe while it runs; empty after wait).
  std::string stderrSoFar() const;
  /// Waits up to `timeout` for `text` to appear on stderr; returns stderr so far, or
  /// std::nullopt on timeout.
  std::optional<std::string> waitForStderr(const std::string& text, std::chrono::milliseconds timeout) const;

 private:
  struct Reader;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::unique_ptr<Reader> reader_;
};

/// The port an elastic agent that hosts the rendezvous store printed ("rendezvous store for
/// run ID listening on HOST:PORT"); 0 when it printed none within `timeout`.
int rendezvousStorePort(const ChildProcess& agent, std::chrono::milliseconds timeout = std::chrono::seconds(30));

/// Runs `pltrun args...` to completion (60 s limit) and returns its status and output.
Finished runPltrun(const std::vector<std::string>& args, const std::vector<std::string>& extraEnv = {});

/// `pltrun args...` as an argv (the binary under test first).
std::vector<std::string> pltrunCommand(const std::vector<std::string>& args);

/// The test worker binary's path.
std::string testWorker();

#ifdef HEARTBEAT_WORKER_BINARY
/// The C++ worker that beats through libpltrun (helpers/heartbeat_worker.cc): e2e tests only.
inline std::string heartbeatWorker() { return HEARTBEAT_WORKER_BINARY; }
#endif

/// True once `pid` no longer exists (a zombie left for init to reap counts as gone).
bool processGone(pid_t pid);
/// Waits up to `timeout` for every pid to be gone; returns the ones still alive.
std::vector<pid_t> waitUntilGone(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout);

/// A loopback port nothing listens on: bound to port 0, read back, closed. Throws if it
/// cannot bind.
int freeLoopbackPort();

/// Waits up to `timeout` for `path` to exist.
bool waitForFile(const std::string& path, std::chrono::milliseconds timeout);
std::string readFile(const std::string& path);

}  // namespace pltrun::test
