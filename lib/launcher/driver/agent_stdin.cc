#include "launcher/driver/agent_stdin.h"

#include <spdlog/spdlog.h>

#include "launcher/plan/shell_words.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {

bool driverMakesSecret(const RendezvousSettings& settings) { return settings.secretFile.empty(); }

std::string forwardedVariablesInput(const Environment& forwarded) {
  std::string lines;
  for (const auto& [name, value] : forwarded) {
    // A name inherited through a prefix (NCCL_...) may not be one a shell can export.
    if (!isVariableName(name)) {
      spdlog::warn("not forwarding {}: not a name a shell can export", name);
      continue;
    }
    if (value.find('\n') != std::string::npos) {
      throw Error(ErrorCode::InvalidArgument,
                  "forwarded variable " + name + " has a line break in its value; the hosts get one variable per line");
    }
    lines += name + "=" + value + "\n";
  }
  return lines + "\n";
}

std::string agentStandardInput(const Environment& forwarded, const RendezvousSettings& settings,
                               const std::string& secret) {
  std::string input = forwardedVariablesInput(forwarded);
  if (driverMakesSecret(settings)) input += secret + "\n";
  return input;
}

std::string agentScript(const std::vector<std::string>& command) {
  // `export "$line"` sets the variable from the line as it is: no word splitting, no
  // expansion of what the value holds. `read` takes stdin a byte at a time, so what
  // follows the empty line (the job secret) is left for pltrun.
  std::string script =
      "while IFS= read -r pltrun_variable && [ -n \"$pltrun_variable\" ]; do export \"$pltrun_variable\"; done; "
      "unset pltrun_variable; exec ";
  return script + shellCommandLine(command);
}

}  // namespace pltrun
