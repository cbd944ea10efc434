#pragma once
// pltrun's flags declared on a CLI11 app: their spellings (--long-name and --long_name, as
// torchrun accepts both), their help, and the PET_* variable Kubeflow sets for each. CLI11
// would read those variables itself, with getenv; pltrun takes them from the Environment
// its parser is given (applyFlagVariables), and the help names them as CLI11's would.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "launcher/command_line/raw_flags.h"
#include "launcher/plan/worker_env.h"
#include "pltrun/error.h"

namespace pltrun {

/// The flags that have a PET_* variable, in declaration order, each with its variable.
using FlagVariables = std::vector<std::pair<CLI::Option*, std::string>>;

/// Declares every pltrun flag on `app`, writing into `raw`, and has app's help show each
/// flag's variable. The options listed belong to `app`.
std::shared_ptr<const FlagVariables> declareFlags(CLI::App& app, RawFlags& raw);

/// After app.parse(): each flag the command line left out takes its variable's value from
/// `env` when that is set and not empty, converted as CLI11 converts it (a flag takes
/// 1/0, true/false, yes/no, ...). Throws CLI::ParseError for a value it cannot convert.
/// Returns the flags so set, as {"--nnodes", "PET_NNODES=abc"}, for tracedToVariables.
std::vector<std::pair<std::string, std::string>> applyFlagVariables(const FlagVariables& variables,
                                                                    const Environment& env);

/// `error`, with " (from PET_NNODES=abc)" when it names a flag a variable set.
Error tracedToVariables(const Error& error, const std::vector<std::pair<std::string, std::string>>& applied);

}  // namespace pltrun
