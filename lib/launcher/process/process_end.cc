#include "launcher/process/process_end.h"

#include <array>

namespace pltrun {
namespace {

// Linux's names of the standard signals by number, as sigabbrev_np() gives them; glibc
// has that only since 2.32, and the wheel links 2.31 (docs/PACKAGING.md).
constexpr std::array<const char*, 32> kSignalNames = {
    nullptr, "HUP",  "INT",  "QUIT", "ILL",    "TRAP",   "ABRT",  "BUS",  "FPE",  "KILL", "USR1",
    "SEGV",  "USR2", "PIPE", "ALRM", "TERM",   "STKFLT", "CHLD",  "CONT", "STOP", "TSTP", "TTIN",
    "TTOU",  "URG",  "XCPU", "XFSZ", "VTALRM", "PROF",   "WINCH", "POLL", "PWR",  "SYS"};

}  // namespace

std::string signalName(int signal) {
  if (signal > 0 && signal < static_cast<int>(kSignalNames.size())) return std::string("SIG") + kSignalNames[signal];
  return "signal " + std::to_string(signal);
}

std::string ProcessEnd::describe() const {
  if (signal != 0) return "signal " + signalName(signal) + " (" + std::to_string(signal) + ")";
  return "exit code " + std::to_string(exitCode);
}

}  // namespace pltrun
