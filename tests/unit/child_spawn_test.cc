// spawnChild with real children: what each one starts with, and how a failed start reads.

#include "launcher/process/child_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "launcher/process/descriptor_slots.h"

using namespace pltrun;

namespace {

struct Output {
  int status = -1;
  std::string text;
};

// Runs `/bin/sh -c script` through spawnChild with stdout and stderr on one pipe, and
// waits for it: its exit status and everything it wrote.
Output runShell(const std::string& script, rlim_t openFileLimit = 0) {
  int pipeEnds[2];
  REQUIRE(pipe2(pipeEnds, O_CLOEXEC) == 0);
  const int devNull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<std::string> arguments = {"sh", "-c", script};
  std::vector<char*> argv;
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  char* environment[] = {const_cast<char*>("PATH=/usr/bin:/bin"), nullptr};
  ChildSetup setup;
  setup.executable = "/bin/sh";
  setup.argv = argv.data();
  setup.envp = environment;
  setup.standardInput = devNull;
  setup.standardOutput = pipeEnds[1];
  setup.standardError = pipeEnds[1];
  setup.openFileLimit = openFileLimit;
  SpawnFailure failure;
  const SpawnedChild child = spawnChild(setup, failure);
  close(pipeEnds[1]);
  close(devNull);
  REQUIRE(child.pid > 0);
  Output output;
  char buffer[4096];
  for (ssize_t count; (count = read(pipeEnds[0], buffer, sizeof buffer)) > 0;) output.text.append(buffer, count);
  close(pipeEnds[0]);
  siginfo_t info{};
  REQUIRE(waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child.pidfd), &info, WEXITED) == 0);
  close(child.pidfd);
  output.status = info.si_status;
  return output;
}

}  // namespace

TEST_CASE("child spawn: the child leads its own group, has only fds 0-2, and gets the open-file limit asked",
          "[child_spawn]") {
  // A descriptor of ours without close-on-exec (as pltrun may inherit one) is not passed on.
  const int leaked = open("/dev/null", O_RDONLY);
  REQUIRE(leaked > 2);
  const Output output = runShell(
      "echo pgid=$(ps -o pgid= -p $$ | tr -d ' ') pid=$$; ls /proc/self/fd | tr '\\n' ' '; echo; ulimit -n", 64);
  close(leaked);
  CHECK(output.status == 0);
  INFO(output.text);
  const auto pgid = output.text.find("pgid=");
  const auto pid = output.text.find(" pid=");
  REQUIRE(pgid != std::string::npos);
  REQUIRE(pid != std::string::npos);
  CHECK(output.text.substr(pgid + 5, pid - pgid - 5) == output.text.substr(pid + 5, output.text.find('\n') - pid - 5));
  // ls's own directory descriptor is 3; nothing of ours beyond it.
  CHECK(output.text.find("\n0 1 2 3 \n") != std::string::npos);
  CHECK(output.text.find("\n64\n") != std::string::npos);
}

TEST_CASE("child spawn: the launcher's blocked signals and handlers do not reach the child", "[child_spawn]") {
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  const Output output = runShell("kill -TERM $$; echo survived");
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  CHECK(output.status == SIGTERM);  // killed by it: unblocked and at its default
  CHECK(output.text.find("survived") == std::string::npos);
}

TEST_CASE("child spawn: a program that cannot be executed is reported with errno and step, nothing left",
          "[child_spawn]") {
  char* argv[] = {const_cast<char*>("missing"), nullptr};
  char* environment[] = {nullptr};
  const int devNull = open("/dev/null", O_RDWR | O_CLOEXEC);
  ChildSetup setup;
  setup.executable = "/nonexistent/program";
  setup.argv = argv;
  setup.envp = environment;
  setup.standardInput = setup.standardOutput = setup.standardError = devNull;
  SpawnFailure failure;
  const SpawnedChild child = spawnChild(setup, failure);
  close(devNull);
  CHECK(child.pid == -1);
  CHECK(failure.error == ENOENT);
  CHECK(std::string(failure.step) == "execve");
  CHECK(failure.childWasCreated);
  // The failed child was reaped: its pid is no child of ours any more.
  CHECK(waitpid(failure.childPid, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
}

TEST_CASE("child spawn: sharing the launcher's table through the low slots, among 4000 descriptors",
          "[child_spawn][slots]") {
  // As pltrun's main does (here in the middle of a test run, so the slots are wherever the
  // lowest free numbers are): from now on this process starts children sharing its table.
  DescriptorSlots::reserve();
  REQUIRE(DescriptorSlots::available());
  std::vector<int> many;
  for (int index = 0; index < 2000; ++index) {
    int ends[2];
    REQUIRE(pipe2(ends, O_CLOEXEC) == 0);
    many.insert(many.end(), {ends[0], ends[1]});
  }
  // Only 0-2 reach the child, and the parent reads end of file once it exits: no slot kept
  // a reference to the child's pipe.
  const Output output = runShell("ls /proc/self/fd | tr '\\n' ' '; echo");
  for (int fd : many) close(fd);
  INFO(output.text);
  CHECK(output.status == 0);
  CHECK(output.text == "0 1 2 3 \n");
  // Its exit status reads as before.
  CHECK(runShell("exit 7").status == 7);
}
