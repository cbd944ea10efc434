#include "launcher/process/process_end.h"

#include <string.h>

namespace pltrun {

std::string signalName(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  return abbreviation ? std::string("SIG") + abbreviation : "signal " + std::to_string(signal);
}

std::string ProcessEnd::describe() const {
  if (signal != 0) return "signal " + signalName(signal) + " (" + std::to_string(signal) + ")";
  return "exit code " + std::to_string(exitCode);
}

}  // namespace pltrun
