#pragma once
// Short commands run side by side, each to its end, with their output kept rather than
// shown: the multi-host driver's health checks, one per host, where every host's answer is
// wanted (a group of workers stops the rest at the first failure; this does not), and a
// node's own --health-check, alone. Each runs
// in its own process group with the parent-death signal, registered with the orphan guard,
// as a worker is; one still running at the deadline is killed, its whole group.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/process/process_end.h"

namespace pltrun {

/// One command to run: a path (not looked up in PATH), its argv (argv[0] included), its
/// whole environment ("NAME=VALUE"), and what it reads on its standard input.
struct CapturedCommand {
  std::string executable;
  std::vector<std::string> argv;
  std::vector<std::string> environment;
  std::string standardInput;
  /// Its standard error into its standard output's pipe: one stream, in the order written
  /// (CapturedRun::err stays empty).
  bool errorToOutput = false;
};

/// How one ended and what it wrote (the last kCapturedOutputLimit bytes of each stream).
struct CapturedRun {
  std::optional<ProcessEnd> end;  ///< none: it could not start
  bool timedOut = false;          ///< killed (SIGKILL) at the deadline
  std::string startError;         ///< why it could not start ("execve: No such file or directory")
  std::string out;
  std::string err;
};

/// What is kept of each stream: the end of it, where the verdict and the error are.
constexpr size_t kCapturedOutputLimit = 64 * 1024;

/// Runs every command at once and returns their runs in the same order, once all have
/// ended or `timeout` has passed (those still running then are killed and reaped).
/// `guardFd` is the orphan guard's registration descriptor (-1: none).
std::vector<CapturedRun> runCapturedCommands(const std::vector<CapturedCommand>& commands,
                                             std::chrono::milliseconds timeout, int guardFd);

}  // namespace pltrun
