#pragma once
// The variables a job passes to its workers by name: mpirun's -x NAME / -x NAME=VALUE, and
// env files of KEY=VALUE lines (--env-file, DeepSpeed's .deepspeed_env). The driver sends
// them to every host; on one node they join the workers' environment directly.

#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/worker_env.h"

namespace pltrun {

/// KEY=VALUE lines (blank lines, # comments, `export K=V` and shell quoting allowed) into
/// `variables`; `path` names the file in errors, with the line number.
void readEnvFile(std::istream& file, const std::string& path, Environment& variables);

/// An env file that is read only when it exists (DeepSpeed's .deepspeed_env).
void readEnvFileIfPresent(const std::string& path, Environment& variables);

/// -x items into `into` (NAME takes its value from `inherited`: an error when unset there),
/// then the lines of `envFile`, which win. Throws InvalidArgument naming the item or the
/// file's line.
void addExportedVariables(const Environment& inherited, const std::vector<std::string>& exports,
                          const std::optional<std::string>& envFile, Environment& into);

}  // namespace pltrun
