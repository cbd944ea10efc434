#pragma once
// What the driver hands each remote agent on its standard input, never on a command line
// (where `ps` on the host shows it to every user): the forwarded variables as NAME=VALUE
// lines, an empty line, then the job's secret when the driver made it. Both ends of the
// variables' part are here: the writer (agentStandardInput) and the reader, the sh script
// the agent is started with (agentScript). The secret's reader is pltrun on the host:
// secret_file=- (rdzv::readSecretFile, rendezvous/store/server/secret_file.h).

#include <string>
#include <vector>

#include "launcher/plan/launch_config.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// Without a secret_file of the user's, the driver makes a secret for this job alone and
/// hands it to each agent on its standard input (its agents then read secret_file=-).
bool driverMakesSecret(const RendezvousSettings& settings);

/// What the agent's shell reads first on its standard input: NAME=VALUE lines, then an
/// empty line. Throws Error(InvalidArgument) for a value with a line break.
std::string forwardedVariablesInput(const Environment& forwarded);

/// An agent's whole standard input: forwardedVariablesInput, then `secret` and a line break
/// when the driver made the secret (driverMakesSecret), for pltrun's secret_file=-.
std::string agentStandardInput(const Environment& forwarded, const RendezvousSettings& settings,
                               const std::string& secret);

/// The POSIX sh script an agent is started with: it exports the NAME=VALUE lines it reads
/// from standard input, up to an empty line, then execs `command` (quoted word by word).
std::string agentScript(const std::vector<std::string>& command);

}  // namespace pltrun
