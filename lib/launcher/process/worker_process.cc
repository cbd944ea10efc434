#include "launcher/process/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>
#include <cstring>

#include "launcher/process/orphan_guard.h"
#include "pltrun/error.h"

namespace pltrun {
namespace bp = boost::process::v2;

namespace {

// The soft open-file limit pltrun was started with, read before main() (so before the
// store raises it to the hard limit): the workers get the user's limit back.
rlim_t softOpenFileLimit() {
  rlimit limit{};
  return getrlimit(RLIMIT_NOFILE, &limit) == 0 ? limit.rlim_cur : 0;
}
const rlim_t kOpenFileLimitAtStart = softOpenFileLimit();

// What to do about a start that failed for want of descriptors or processes.
std::string startHint(const bp::error_code& error) {
  if (error.value() == EMFILE || error.value() == ENFILE) {
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    return "; each worker needs about 4 descriptors (its pipes) and the open-file limit is " +
           std::to_string(limit.rlim_cur) + ": raise it (ulimit -n) or start fewer workers";
  }
  if (error.value() == EAGAIN) return "; the process limit (ulimit -u) is reached: raise it or start fewer workers";
  return "";
}

// Runs in the child between fork and exec (only async-signal-safe calls here).
struct JoinOwnGroupAndDieWithLauncher {
  pid_t launcherPid;
  rlim_t openFileLimit;  ///< the soft limit pltrun was started with; 0: leave as it is
  int guardFd;           ///< the orphan guard's pipe; -1: none

  template <typename Launcher>
  bp::error_code on_exec_setup(Launcher&, const bp::filesystem::path&, const char* const*) {
    // Its own process group: the launcher signals the worker and its children as one, and
    // the terminal's Ctrl-C reaches only the launcher, which decides what to forward.
    if (setpgid(0, 0) != 0) return bp::error_code(errno, bp::system_category());
    // Watched by the orphan guard from before exec: were the launcher killed right after
    // this fork, before it could register the group itself, the group would be missed.
    if (guardFd >= 0) writeGuardRecord(guardFd, getpid());
    // Killed if the launcher dies, even by SIGKILL; the check closes the race where the
    // launcher died before prctl took effect.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return bp::error_code(errno, bp::system_category());
    if (getppid() != launcherPid) _exit(128 + SIGKILL);
    // The launcher blocks SIGPIPE and signals it waits for; the worker starts clean.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // pltrun raised its own open-file limit for the store; the worker gets the user's.
    rlimit limit{};
    if (openFileLimit != 0 && getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      limit.rlim_cur = std::min(openFileLimit, limit.rlim_max);
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    return {};
  }

  // In the launcher when the start failed (exec did not happen): the group the child
  // registered in on_exec_setup is forgotten, so its id, once reused, is never signalled.
  // Variadic: Boost 1.81 detects on_error with one argument more than it passes.
  template <typename Launcher, typename... Rest>
  void on_error(Launcher& launcher, Rest&&...) {
    if (guardFd >= 0 && launcher.pid > 0) writeGuardRecord(guardFd, -static_cast<pid_t>(launcher.pid));
  }
};

// The read end of a pipe that already holds all of `bytes` and whose write end is closed:
// the child reads them, then end of file. They fit the pipe's buffer, so nothing blocks.
class FilledPipe {
 public:
  explicit FilledPipe(const std::string& bytes) {
    constexpr size_t kPipeBuffer = 64 * 1024;  // Linux's default pipe capacity
    if (bytes.size() > kPipeBuffer) throw Error(ErrorCode::InvalidArgument, "standard input over 64 KiB");
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) throw Error(ErrorCode::System, std::string("pipe: ") + std::strerror(errno));
    readEnd_ = ends[0];
    size_t written = 0;
    while (written < bytes.size()) {
      const ssize_t count = ::write(ends[1], bytes.data() + written, bytes.size() - written);
      if (count < 0 && errno == EINTR) continue;
      if (count < 0) {
        const int error = errno;
        ::close(ends[1]);
        throw Error(ErrorCode::System, std::string("writing a child's stdin: ") + std::strerror(error));
      }
      written += static_cast<size_t>(count);
    }
    ::close(ends[1]);
  }
  ~FilledPipe() { ::close(readEnd_); }  // the child has its own copy once started
  FilledPipe(const FilledPipe&) = delete;
  FilledPipe& operator=(const FilledPipe&) = delete;
  int readEnd() const { return readEnd_; }

 private:
  int readEnd_ = -1;
};

}  // namespace

struct WorkerProcess::Impl {
  bp::process process;
};

WorkerProcess::WorkerProcess(boost::asio::io_context& context, const Launch& launch,
                             boost::asio::readable_pipe& stdoutPipe, boost::asio::readable_pipe& stderrPipe) {
  std::vector<std::string> arguments(launch.argv.begin() + 1, launch.argv.end());
  bp::error_code error;
  std::optional<FilledPipe> input;
  if (launch.standardInput) input.emplace(*launch.standardInput);
  // Two calls, not one stdio object filled in: the bindings own descriptors and must not
  // be copied or reassigned.
  bp::process process =
      input ? bp::default_process_launcher()(
                  context.get_executor(), error, launch.executable, arguments,
                  bp::process_stdio{input->readEnd(), stdoutPipe, stderrPipe},
                  bp::process_environment(launch.environment),
                  JoinOwnGroupAndDieWithLauncher{getpid(), kOpenFileLimitAtStart, launch.guardFd})
            : bp::default_process_launcher()(
                  context.get_executor(), error, launch.executable, arguments,
                  bp::process_stdio{nullptr, stdoutPipe, stderrPipe}, bp::process_environment(launch.environment),
                  JoinOwnGroupAndDieWithLauncher{getpid(), kOpenFileLimitAtStart, launch.guardFd});
  if (error) {
    throw Error(ErrorCode::System, "cannot start '" + launch.executable + "': " + error.message() + startHint(error));
  }
  pid_ = process.id();
  groupId_ = pid_;
  impl_ = std::make_unique<Impl>(Impl{std::move(process)});
}

WorkerProcess::~WorkerProcess() {
  // The supervisor destroys only ended workers; for one still running (an error path), kill
  // its whole group, and Boost's destructor reaps the leader.
  if (pid_ > 0) signalGroup(SIGKILL);
}

void WorkerProcess::asyncWaitForEnd(std::function<void(ProcessEnd)> onEnd) {
  // The handle's wait gives the raw wait status; the process's own wait folds a signal
  // into a bare number, and "killed by signal 3" must not read as "exit code 3".
  impl_->process.handle().async_wait([this, onEnd = std::move(onEnd)](bp::error_code error, int status) {
    ProcessEnd end;
    if (error) {
      // The status is lost (someone else reaped the worker): never report that as success.
      end.exitCode = 255;
    } else if (WIFSIGNALED(status)) {
      end.signal = WTERMSIG(status);
    } else {
      end.exitCode = WEXITSTATUS(status);
    }
    pid_ = -1;  // reaped: its pid may be reused from now on
    onEnd(end);
  });
}

void WorkerProcess::signalGroup(int signal) {
  // The group outlives its leader while its children run, so the group id stays valid.
  if (groupId_ > 0) kill(-groupId_, signal);
}

std::unique_ptr<StartedProcess> WorkerProcessStarter::start(boost::asio::io_context& context,
                                                            const ProcessLaunch& launch,
                                                            boost::asio::readable_pipe& stdoutPipe,
                                                            boost::asio::readable_pipe& stderrPipe) {
  return std::make_unique<WorkerProcess>(context, launch, stdoutPipe, stderrPipe);
}

}  // namespace pltrun
