#include "helpers/child_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace pltrun::test {

// Drains the child's pipes on its own thread, so a child that writes a lot never blocks
// on a full pipe while the test waits for something else.
struct ChildProcess::Reader {
  int outFd = -1;
  int errFd = -1;
  std::string out;
  std::string err;
  mutable std::mutex errMutex;  // guards err while the thread runs (stderrSoFar)
  std::thread thread;

  void run() {
    char buffer[65536];
    while (outFd >= 0 || errFd >= 0) {
      pollfd fds[2] = {{outFd, POLLIN, 0}, {errFd, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0 && errno == EINTR) continue;
      for (int index = 0; index < 2; ++index) {
        int& fd = index == 0 ? outFd : errFd;
        if (fd < 0 || fds[index].revents == 0) continue;
        ssize_t got = read(fd, buffer, sizeof buffer);
        if (got > 0 && index == 1) {
          std::lock_guard<std::mutex> lock(errMutex);
          err.append(buffer, static_cast<size_t>(got));
        } else if (got > 0) {
          out.append(buffer, static_cast<size_t>(got));
        } else if (got == 0 || errno != EINTR) {
          close(fd);
          fd = -1;
        }
      }
    }
  }
};

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extraEnv,
                           const std::string& stdoutPath)
    : reader_(std::make_unique<Reader>()) {
  int outPipe[2] = {-1, -1};
  int errPipe[2];
  if ((stdoutPath.empty() && pipe2(outPipe, O_CLOEXEC) != 0) || pipe2(errPipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  // extraEnv entries replace inherited ones of the same name; "NAME" alone removes it.
  auto nameOf = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) {
    bool replaced = false;
    for (const auto& extra : extraEnv) replaced = replaced || nameOf(extra) == nameOf(*entry);
    if (!replaced) environment.emplace_back(*entry);
  }
  for (const auto& extra : extraEnv) {
    if (extra.find('=') != std::string::npos) environment.push_back(extra);
  }
  std::vector<char*> argvPointers, envPointers;
  for (const auto& arg : argv) argvPointers.push_back(const_cast<char*>(arg.c_str()));
  for (const auto& entry : environment) envPointers.push_back(const_cast<char*>(entry.c_str()));
  argvPointers.push_back(nullptr);
  envPointers.push_back(nullptr);

  pid_ = fork();
  if (pid_ == 0) {
    int out = stdoutPath.empty() ? outPipe[1] : open(stdoutPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(errPipe[1], 2);
    int devNull = open("/dev/null", O_RDONLY);
    dup2(devNull, 0);
    execve(argvPointers[0], argvPointers.data(), envPointers.data());
    _exit(127);
  }
  if (outPipe[1] >= 0) close(outPipe[1]);
  close(errPipe[1]);
  reader_->outFd = outPipe[0];
  reader_->errFd = errPipe[0];
  reader_->thread = std::thread([reader = reader_.get()] { reader->run(); });
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (reader_->thread.joinable()) reader_->thread.join();
}

void ChildProcess::signal(int signal) const { kill(pid_, signal); }

Finished ChildProcess::wait(std::chrono::milliseconds timeout) {
  Finished finished;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      finished.timedOut = true;
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  reaped_ = true;
  reader_->thread.join();
  finished.status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  finished.out = std::move(reader_->out);
  finished.err = std::move(reader_->err);
  return finished;
}

std::string ChildProcess::stderrSoFar() const {
  std::lock_guard<std::mutex> lock(reader_->errMutex);
  return reader_->err;
}

std::optional<std::string> ChildProcess::waitForStderr(const std::string& text,
                                                       std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::string err = stderrSoFar();
    if (err.find(text) != std::string::npos) return err;
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int rendezvousStorePort(const ChildProcess& agent, std::chrono::milliseconds timeout) {
  const std::regex line("rendezvous store for run [^\\s]+ listening on [^\\s]+:([0-9]+)\n");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const std::string err = agent.stderrSoFar();
    std::smatch match;
    if (std::regex_search(err, match, line)) return std::stoi(match[1].str());
    if (std::chrono::steady_clock::now() > deadline) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<std::string> pltrunCommand(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {PLTRUN_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Finished runPltrun(const std::vector<std::string>& args, const std::vector<std::string>& extraEnv) {
  ChildProcess pltrun(pltrunCommand(args), extraEnv);
  return pltrun.wait(std::chrono::seconds(60));
}

std::string testWorker() { return TEST_WORKER_BINARY; }

bool processGone(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  return close == std::string::npos || (close + 2 < text.size() && text[close + 2] == 'Z');
}

std::vector<pid_t> waitUntilGone(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::vector<pid_t> alive;
    for (pid_t pid : pids) {
      if (!processGone(pid)) alive.push_back(pid);
    }
    if (alive.empty() || std::chrono::steady_clock::now() > deadline) return alive;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot find a free loopback port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

bool waitForFile(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace pltrun::test
