#include "launcher/process/zygote.h"

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "launcher/plan/text_parsing.h"
#include "launcher/process/descendant_sweep.h"
#include "launcher/process/orphan_guard.h"
#include "launcher/process/process_end.h"
#include "launcher/process/process_stat.h"
#include "launcher/process/zygote_messages.h"
#include "launcher/process/zygote_source.h"

namespace pltrun {
namespace {

// The zygote's -c: reads its code (zygote.py) as pltrun's first message on stdin and runs it
// in a namespace of its own, so __main__ stays as a fresh interpreter has it.
constexpr const char* kBootstrap =
    "exec(compile(__import__('os').read(0, 1 << 22), '<pltrun zygote>', 'exec'), {'__name__': '__pltrun_zygote__'})";
// Room after it in the zygote's argv, where each worker writes its own command line.
constexpr size_t kCommandLineRoom = 4096;

constexpr size_t kMaxAnswer = 64 * 1024;

// How long the first workers wait for the preload before pltrun says they are waiting.
constexpr std::chrono::milliseconds kQuietWait{10000};

// How long a zygote asked to exit (its socket closed) has before it is killed.
constexpr std::chrono::milliseconds kExitGrace{2000};

std::string systemError(const std::string& what) { return what + ": " + std::strerror(errno); }

// How the ended zygote ended, read without reaping it.
std::string endOf(int pidfd) {
  const std::optional<ProcessEnd> end = peekChildEnd(pidfd);
  return end ? "it ended with " + end->describe() : "it ended";
}

bool sendWithDescriptors(int socket, const std::string& message, const std::vector<int>& fds) {
  iovec data{const_cast<char*>(message.data()), message.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  header.msg_control = control.data();
  header.msg_controllen = control.size();
  cmsghdr* rights = CMSG_FIRSTHDR(&header);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
  return sendmsg(socket, &header, MSG_NOSIGNAL) == static_cast<ssize_t>(message.size());
}

std::vector<int> attachedDescriptors(const ChildSetup& setup) {
  std::vector<int> fds = {setup.standardInput, setup.standardOutput, setup.standardError};
  if (setup.guardFd >= 0) fds.push_back(setup.guardFd);
  if (setup.cgroupProcsFd >= 0) fds.push_back(setup.cgroupProcsFd);
  return fds;
}

}  // namespace

Zygote::Zygote(ZygoteSettings settings) : settings_(std::move(settings)) { start(); }

Zygote::~Zygote() { end(); }

void Zygote::start() {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    failure_ = systemError("cannot create its socket");
    return;
  }
  control_ = ends[0];
  const std::vector<std::string> argv = {settings_.workerArgv.at(0), "-u", "-c",
                                         kBootstrap + std::string(kCommandLineRoom, ' ')};
  const std::vector<char*> argvPointers = nullTerminated(argv);
  const std::vector<char*> environmentPointers = nullTerminated(settings_.environment);
  ChildSetup setup;
  setup.executable = settings_.interpreter.c_str();
  setup.argv = argvPointers.data();
  setup.envp = environmentPointers.data();
  setup.standardInput = ends[1];
  setup.standardOutput = STDERR_FILENO;  // what a preloaded module prints goes with pltrun's own lines
  setup.standardError = STDERR_FILENO;
  setup.guardFd = settings_.guardFd;
  setup.openFileLimit = openFileLimitAtStart();
  SpawnFailure spawnFailure;
  const SpawnedChild child = spawnChild(setup, spawnFailure);
  close(ends[1]);
  if (child.pid < 0) {
    errno = spawnFailure.error;
    failure_ = systemError(std::string("cannot start it (") + spawnFailure.step + ")");
    return;
  }
  pid_ = child.pid;
  pidfd_ = child.pidfd;
  const std::string config = zygoteConfigMessage(settings_.preload, settings_.workerArgv, settings_.environment);
  if (config.empty()) {
    fail("the workers' command or environment is not UTF-8");
  } else if (send(control_, kZygoteSource, std::strlen(kZygoteSource), MSG_NOSIGNAL) < 0 ||
             send(control_, config.data(), config.size(), MSG_NOSIGNAL) < 0) {
    fail(systemError("cannot reach it"));
  }
}

bool Zygote::startsLike(const ChildSetup& setup) const {
  return setup.executable != nullptr && settings_.interpreter == setup.executable && setup.argv != nullptr &&
         setup.argv[0] != nullptr && setup.argv[1] != nullptr && std::strcmp(setup.argv[1], "-u") == 0 &&
         setup.argv[2] != nullptr;
}

SpawnedChild Zygote::fork(const ChildSetup& setup, std::string& why) {
  if (failure_.empty() && !ready_) ready_ = awaitReady();
  if (!failure_.empty()) {
    why = failure_;
    return {};
  }
  const std::string request = forkRequestMessage({setup, getpid(), attachedDescriptorNames(setup)});
  if (request.empty()) {
    why.clear();
    return {};
  }
  const auto asked = std::chrono::steady_clock::now();
  const SpawnedChild child = askForWorker(setup, request, why);
  if (child.pid >= 0) {
    spdlog::debug("--preload: the zygote forked pid {} in {:.1f} ms", child.pid,
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count());
  }
  return child;
}

bool Zygote::awaitReady() {
  std::string message;
  // A long preload (a slow shared file system) is said, not waited out in silence.
  pollfd answered[2] = {{control_, POLLIN, 0}, {pidfd_, POLLIN, 0}};
  const auto patience = std::min(kQuietWait, settings_.preloadDeadline);
  if (poll(answered, 2, static_cast<int>(patience.count())) == 0) {
    spdlog::info("--preload: the zygote is still importing {}; the workers start once it is done (at most {} s)",
                 joinText(settings_.preload, ","),
                 std::chrono::duration_cast<std::chrono::seconds>(settings_.preloadDeadline).count());
  }
  if (!receiveAnswer(settings_.preloadDeadline - patience, message)) return false;
  const ZygoteAnswer answer = parseZygoteAnswer(message);
  if (!answer.ready) fail(answer.error.empty() ? "it did not say it was ready" : answer.error);
  return answer.ready;
}

SpawnedChild Zygote::askForWorker(const ChildSetup& setup, const std::string& request, std::string& why) {
  std::string message;
  if (!sendWithDescriptors(control_, request, attachedDescriptors(setup))) {
    fail(errno == EPIPE || errno == ECONNRESET ? endOf(pidfd_) : systemError("cannot reach it"));
  } else if (receiveAnswer(settings_.forkDeadline, message)) {
    const ZygoteAnswer answer = parseZygoteAnswer(message);
    if (answer.pid > 0) {
      // The middle process has exited and been reaped: the worker is pltrun's child (alive
      // or a zombie), so its pid cannot be reused while the pidfd is opened.
      const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, answer.pid, 0));
      if (pidfd >= 0 && parentOf(answer.pid) == getpid()) {
        claimOwnChild(answer.pid);
        return SpawnedChild{answer.pid, pidfd};
      }
      if (pidfd >= 0) close(pidfd);
      fail("its workers are not pltrun's children: a process between pltrun and it adopts orphans");
    } else {
      fail(answer.error.empty() ? "it answered without a worker" : answer.error);
    }
  }
  why = failure_;
  return {};
}

// One answer of the zygote within `deadline`; false (the zygote failed) if it ended, hung
// or could not be read.
bool Zygote::receiveAnswer(std::chrono::milliseconds deadline, std::string& answer) {
  pollfd watched[2] = {{control_, POLLIN, 0}, {pidfd_, POLLIN, 0}};
  int ready = 0;
  do {
    ready = poll(watched, 2, static_cast<int>(deadline.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready == 0) {
    fail("it did not answer within " + std::to_string(deadline.count() / 1000) + " s");
    return false;
  }
  if (ready > 0 && (watched[0].revents & POLLIN) != 0) {
    answer.resize(kMaxAnswer);
    const ssize_t size = recv(control_, answer.data(), answer.size(), 0);
    if (size > 0) {
      answer.resize(static_cast<size_t>(size));
      return true;
    }
  }
  fail(endOf(pidfd_));
  return false;
}

void Zygote::fail(std::string why) {
  if (failure_.empty()) failure_ = std::move(why);
  end();
}

void Zygote::end() {
  // Its socket closed, a zygote that serves exits by itself: through a wrapper (a container
  // or chroot runner) that waits for it, so nothing of it is left for pltrun to adopt.
  const bool asked = control_ >= 0 && failure_.empty();
  if (control_ >= 0) close(control_);
  control_ = -1;
  if (pid_ < 0) return;
  pollfd ended{pidfd_, POLLIN, 0};
  if (asked) poll(&ended, 1, static_cast<int>(kExitGrace.count()));
  kill(-pid_, SIGKILL);  // its group: the zygote and a middle process it may be forking
  reapChild(pid_, pidfd_);
  close(pidfd_);
  if (settings_.guardFd >= 0) writeGuardRecord(settings_.guardFd, -pid_);
  pid_ = -1;
  pidfd_ = -1;
}

}  // namespace pltrun
