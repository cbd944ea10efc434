#pragma once
// The variables a job passes to its workers by name: mpirun's -x NAME / -x NAME=VALUE, and
// env files of KEY=VALUE lines (--env-file, DeepSpeed's .deepspeed_env). The driver sends
// them to every host; on one node they join the workers' environment directly. Pure: a
// file is read through the FileReader given (readOwnFileFromDisk, command_line/process_inputs.h).

#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/file_reader.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// KEY=VALUE lines (blank lines, # comments, `export K=V` and shell quoting allowed) into
/// `variables`; `path` names the file in errors, with the line number.
void readEnvFile(std::istream& file, const std::string& path, Environment& variables);

/// The lines of the env file at `path` into `variables`, read with `readOwnFile` (the real
/// one refuses a file another user could have written: FileReadError::Reason::OthersControl):
/// Error(InvalidArgument) naming it as `what` ("--env-file") and its owner when refused, or
/// when it cannot be read (`required`; else a missing file or a directory is skipped:
/// DeepSpeed's .deepspeed_env is read only where it exists). Returns the line for the log,
/// "read 3 variables from ./.deepspeed_env", or none when skipped.
std::optional<std::string> readEnvFileAt(const std::string& path, const std::string& what, bool required,
                                         const FileReader& readOwnFile, Environment& variables);

/// -x items into `into` (NAME takes its value from `inherited`: an error when unset there),
/// then the lines of `envFile` (readEnvFileAt with `readOwnFile`), which win. Throws
/// InvalidArgument naming the item or the file's line. Returns the env file's line for the
/// log, if any.
std::optional<std::string> addExportedVariables(const Environment& inherited, const std::vector<std::string>& exports,
                                                const std::optional<std::string>& envFile,
                                                const FileReader& readOwnFile, Environment& into);

}  // namespace pltrun
