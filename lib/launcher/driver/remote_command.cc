#include "launcher/driver/remote_command.h"

#include <unistd.h>

#include "launcher/command_line/process_inputs.h"
#include "launcher/driver/agent_stdin.h"
#include "launcher/plan/program_command.h"
#include "launcher/plan/shell_words.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

// Transports that join their arguments into one command line for a shell on the far side.
bool runsRemoteShell(const std::string& program) {
  const std::string name = program.substr(program.rfind('/') + 1);
  return name == "ssh" || name == "pdsh" || name == "rsh" || name == "oarsh";
}

std::string thisExecutable() {
  char path[4096] = {};
  ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  return length > 0 ? std::string(path, length) : "pltrun";
}

}  // namespace

bool startsOnThisMachine(const RemoteLaunchSettings& remote, const std::string& host, const std::string& localName) {
  if (!remote.remoteCommand.empty()) return false;
  if (host == "localhost" || host == "127.0.0.1" || host == "::1") return true;
  return !localName.empty() && (host == localName || host == localName.substr(0, localName.find('.')));
}

std::vector<std::string> remoteArgv(const RemoteLaunchSettings& remote, const std::string& host,
                                    const std::vector<std::string>& command) {
  std::vector<std::string> argv;
  if (remote.remoteCommand.empty()) {
    argv = {"ssh", "-o", "BatchMode=yes"};
    if (remote.sshPort) argv.insert(argv.end(), {"-p", std::to_string(*remote.sshPort)});
    if (!remote.sshIdentity.empty()) argv.insert(argv.end(), {"-i", remote.sshIdentity});
    argv.insert(argv.end(), {"--", host, shellCommandLine(command)});  // never an option, whatever its name
    return argv;
  }
  bool placed = false;
  for (std::string word : splitShellWords(remote.remoteCommand, "--remote-command")) {
    if (word == "{cmd}") {
      argv.push_back(shellCommandLine(command));
      placed = true;
      continue;
    }
    for (size_t at = word.find("{host}"); at != std::string::npos; at = word.find("{host}", at + host.size())) {
      word.replace(at, 6, host);
    }
    argv.push_back(word);
  }
  if (placed) return argv;
  // ssh and pdsh hand the far side's shell one command line; kubectl exec, docker exec and
  // the like execute their arguments as they are.
  if (!argv.empty() && runsRemoteShell(argv.front())) {
    argv.push_back(shellCommandLine(command));
  } else {
    argv.insert(argv.end(), command.begin(), command.end());
  }
  return argv;
}

HostCommand pltrunOnHost(const RemoteLaunchSettings& remote, const std::string& host, const std::string& localName,
                         const std::string& path, const std::vector<std::string>& arguments) {
  const bool here = startsOnThisMachine(remote, host, localName);
  std::vector<std::string> pltrun = {here || remote.remotePltrun.empty() ? thisExecutable() : remote.remotePltrun};
  pltrun.insert(pltrun.end(), arguments.begin(), arguments.end());
  // Run by sh whether or not the far side starts a shell of its own (kubectl exec does
  // not); the forwarded variables come on its standard input, never on a command line.
  // This machine's own hosts run the same script as the driver's child, without ssh.
  std::vector<std::string> script = {here ? "/bin/sh" : "sh", "-c", agentScript(pltrun)};
  HostCommand command{"", here ? script : remoteArgv(remote, host, script)};
  command.executable = findExecutable(command.argv.front(), path, fileAccessOnDisk);
  if (command.executable.empty()) {
    throw Error(ErrorCode::NotFound, command.argv.front() + " not found on PATH: install it, or pass --remote-command");
  }
  return command;
}

}  // namespace pltrun
