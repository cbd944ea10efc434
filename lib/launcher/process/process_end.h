#pragma once
// How a process ended, apart from the process itself: the group, its failure report and
// the tests' fake processes all describe an end the same way.

#include <string>

namespace pltrun {

/// How a process ended: an exit code, or the signal that killed it.
struct ProcessEnd {
  int exitCode = 0;  ///< meaningful when signal == 0
  int signal = 0;    ///< non-zero when killed by a signal

  bool succeeded() const { return signal == 0 && exitCode == 0; }
  /// The shell's convention: the exit code, or 128 + the signal.
  int shellStatus() const { return signal != 0 ? 128 + signal : exitCode; }
  /// "exit code 3" or "signal SIGKILL (9)".
  std::string describe() const;
};

/// The name of a signal, like "SIGTERM"; "signal N" for unknown numbers.
std::string signalName(int signal);

}  // namespace pltrun
