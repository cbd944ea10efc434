#include "launcher/plan/program_command.h"

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string requireExecutable(const std::string& name, const std::string& path, const std::string& what,
                              const FileAccessProbe& files) {
  std::string found = findExecutable(name, path, files);
  if (!found.empty()) return found;
  if (name.find('/') != std::string::npos) {
    const char* problem = files(name).exists ? "is not an executable file" : "does not exist";
    throw Error(ErrorCode::NotFound, what + " '" + name + "' " + problem);
  }
  throw Error(ErrorCode::NotFound, what + " '" + name + "' was not found in PATH; give its path or install it");
}

}  // namespace

std::string findExecutable(const std::string& name, const std::string& path, const FileAccessProbe& files) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return files(name).executable ? name : std::string();
  for (std::string_view directory : splitText(path, ':')) {
    // An empty PATH entry means the current directory, as in execvp.
    std::string candidate = (directory.empty() ? std::string(".") : std::string(directory)) + "/" + name;
    if (files(candidate).executable) return candidate;
  }
  return {};
}

bool programRunsUnderPython(const LaunchConfig& config) {
  return config.programKind == ProgramKind::Module || config.programKind == ProgramKind::Script ||
         (config.programKind == ProgramKind::Auto && endsWith(config.program, ".py"));
}

ProgramCommand resolveProgramCommand(const LaunchConfig& config, const std::string& pythonExec, const std::string& path,
                                     const FileAccessProbe& files) {
  ProgramCommand command;
  if (programRunsUnderPython(config)) {
    command.executable = requireExecutable(pythonExec, path, "Python interpreter (PYTHON_EXEC)", files);
    command.argv = {pythonExec, "-u"};
    if (config.programKind == ProgramKind::Module) {
      command.argv.push_back("-m");
    } else if (!files(config.program).readable) {
      throw Error(ErrorCode::NotFound, "script '" + config.program + "' does not exist or cannot be read");
    }
  } else {
    command.executable = requireExecutable(config.program, path, "program", files);
  }
  command.argv.push_back(config.program);
  command.argv.insert(command.argv.end(), config.programArgs.begin(), config.programArgs.end());
  return command;
}

}  // namespace pltrun
