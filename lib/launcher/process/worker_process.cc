#include "launcher/process/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "launcher/process/child_spawn.h"
#include "launcher/process/orphan_guard.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

// What to do about a start that failed for want of descriptors or processes.
std::string startHint(int error) {
  if (error == EMFILE || error == ENFILE) {
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    return "; each worker needs about 5 descriptors (its pipes and heartbeat socket) and the open-file limit is " +
           std::to_string(limit.rlim_cur) + ": raise it (ulimit -n) or start fewer workers";
  }
  if (error == EAGAIN) return "; the process limit (ulimit -u) is reached: raise it or start fewer workers";
  return "";
}

// A descriptor closed when this goes out of scope, unless released.
class OwnedFd {
 public:
  explicit OwnedFd(int fd = -1) : fd_(fd) {}
  ~OwnedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  OwnedFd(OwnedFd&& other) noexcept : fd_(other.release()) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// What the worker reads on stdin: /dev/null, or the read end of a pipe that already holds
// all of `bytes` and whose write end is closed (the child reads them, then end of file;
// they fit the pipe's buffer, so nothing blocks).
OwnedFd standardInputFor(const std::optional<std::string>& bytes) {
  if (!bytes) return OwnedFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  constexpr size_t kPipeBuffer = 64 * 1024;  // Linux's default pipe capacity
  if (bytes->size() > kPipeBuffer) throw Error(ErrorCode::InvalidArgument, "standard input over 64 KiB");
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) throw Error(ErrorCode::System, std::string("pipe: ") + std::strerror(errno));
  OwnedFd readEnd(ends[0]);
  const OwnedFd writeEnd(ends[1]);
  for (size_t written = 0; written < bytes->size();) {
    const ssize_t count = ::write(writeEnd.get(), bytes->data() + written, bytes->size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) throw Error(ErrorCode::System, std::string("writing a child's stdin: ") + std::strerror(errno));
    written += static_cast<size_t>(count);
  }
  return readEnd;
}

// A new pipe, both ends close-on-exec (the child gets its end through dup2).
std::pair<OwnedFd, OwnedFd> makePipe() {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) {
    const int error = errno;
    throw Error(ErrorCode::System,
                std::string("cannot create a worker's output pipe: ") + std::strerror(error) + startHint(error));
  }
  return std::pair<OwnedFd, OwnedFd>(ends[0], ends[1]);
}

std::string startFailure(const std::string& executable, const SpawnFailure& failure) {
  std::string message = "cannot start '" + executable + "': " + std::strerror(failure.error);
  if (std::strcmp(failure.step, "execve") != 0) message += std::string(" (at ") + failure.step + ")";
  return message + startHint(failure.error);
}

}  // namespace

struct WorkerProcess::Impl {
  boost::asio::posix::stream_descriptor pidfd;
};

WorkerProcess::WorkerProcess(boost::asio::io_context& context, const Launch& launch,
                             boost::asio::readable_pipe& stdoutPipe, boost::asio::readable_pipe& stderrPipe,
                             const Spawn& spawn) {
  const OwnedFd input = standardInputFor(launch.standardInput);  // the child has its own copy once started
  auto [stdoutRead, stdoutWrite] = makePipe();
  auto [stderrRead, stderrWrite] = makePipe();
  const std::vector<char*> argv = nullTerminated(launch.argv);
  const std::vector<char*> environment = nullTerminated(launch.environment);

  ChildSetup setup;
  setup.executable = launch.executable.c_str();
  setup.argv = argv.data();
  setup.envp = environment.data();
  setup.standardInput = input.get();
  setup.standardOutput = stdoutWrite.get();
  setup.standardError = stderrWrite.get();
  setup.guardFd = launch.guardFd;
  setup.cgroupProcsFd = launch.cgroupProcsFd;
  setup.openFileLimit = openFileLimitAtStart();
  cpu_set_t cpus;  // the child reads it before exec, while this frame is still here (CLONE_VFORK)
  if (!launch.cpus.empty()) {
    CPU_ZERO(&cpus);
    for (int cpu : launch.cpus) {
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &cpus);
    }
    setup.cpus = &cpus;
  }
  SpawnFailure failure;
  const SpawnedChild child = spawn(setup, failure);
  if (child.pid < 0) {
    // The child registered its group with the guard before it failed: forget it, so the
    // id, once reused, is never signalled.
    if (failure.childWasCreated && launch.guardFd >= 0) writeGuardRecord(launch.guardFd, -failure.childPid);
    throw Error(ErrorCode::System, startFailure(launch.executable, failure));
  }
  groupId_ = child.pid;
  OwnedFd pidfd(child.pidfd);
  try {
    auto impl = std::make_unique<Impl>(Impl{boost::asio::posix::stream_descriptor(context)});
    stdoutPipe.assign(stdoutRead.get());
    stdoutRead.release();
    stderrPipe.assign(stderrRead.get());
    stderrRead.release();
    impl->pidfd.assign(pidfd.get());  // last: from here on the descriptor owns the pidfd
    pidfd.release();
    impl_ = std::move(impl);
  } catch (...) {
    // Not watched by the event loop, so never to be waited for: end it now, forgotten by
    // the guard before its pid can be reused.
    kill(-child.pid, SIGKILL);
    if (launch.guardFd >= 0) writeGuardRecord(launch.guardFd, -child.pid);
    reapChild(child.pid, pidfd.get());
    throw;
  }
}

WorkerProcess::~WorkerProcess() {
  // The supervisor reaps every worker it started; on an error path one may still run:
  // kill its whole group and reap it here.
  if (!reaped_) {
    signalGroup(SIGKILL);
    reap();
  }
}

void WorkerProcess::asyncWaitForEnd(std::function<void(ProcessEnd)> onEnd) {
  impl_->pidfd.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                          [this, onEnd = std::move(onEnd)](const boost::system::error_code& error) mutable {
                            if (error == boost::asio::error::operation_aborted) return;
                            std::optional<ProcessEnd> end = peekChildEnd(impl_->pidfd.native_handle());
                            if (!end) {  // woken before the end: wait again
                              asyncWaitForEnd(std::move(onEnd));
                              return;
                            }
                            onEnd(*end);
                          });
}

void WorkerProcess::signalGroup(int signal) {
  // Until the leader is reaped its group id cannot be reused, even once every member has
  // ended: the signal reaches this worker's group or nobody.
  if (!reaped_) kill(-groupId_, signal);
}

void WorkerProcess::reap() {
  if (reaped_) return;
  reapChild(groupId_, impl_->pidfd.native_handle());
  reaped_ = true;
}

std::unique_ptr<StartedProcess> WorkerProcessStarter::start(boost::asio::io_context& context,
                                                            const ProcessLaunch& launch,
                                                            boost::asio::readable_pipe& stdoutPipe,
                                                            boost::asio::readable_pipe& stderrPipe) {
  return std::make_unique<WorkerProcess>(context, launch, stdoutPipe, stderrPipe);
}

}  // namespace pltrun
