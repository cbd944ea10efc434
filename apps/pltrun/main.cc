// pltrun: parse the command line, run the launcher, map errors to exit statuses.

#include <signal.h>

#include <cstdio>
#include <variant>

#include "base/out_of_descriptors.h"
#include "base/terminal_text.h"
#include "launcher/command_line/command_line.h"
#include "launcher/command_line/process_inputs.h"
#include "launcher/health/health_command.h"
#include "launcher/launcher.h"
#include "launcher/output/console_writer.h"
#include "launcher/output/launcher_log.h"
#include "launcher/process/descendant_sweep.h"
#include "launcher/process/descriptor_slots.h"
#include "launcher/process/signal_receiver.h"
#include "launcher/status/status_command.h"
#include "pltrun/error.h"

namespace {

// Exit statuses for problems found before any worker runs, as shells and torchrun use them.
constexpr int kUsageError = 2;
constexpr int kProgramNotFound = 127;
constexpr int kLauncherFailure = 1;

int exitStatusFor(pltrun::ErrorCode code) {
  switch (code) {
    case pltrun::ErrorCode::InvalidArgument:
      return kUsageError;
    case pltrun::ErrorCode::NotFound:
      return kProgramNotFound;
    default:
      return kLauncherFailure;
  }
}

// What the workers left behind outside their process groups is killed once the job is over.
struct SweepWhenDone {
  ~SweepWhenDone() {
    const pltrun::SweptChildren swept = pltrun::sweepRemainingChildren();
    if (swept.killed == 0) return;
    const std::string where = swept.outsideGroups == swept.killed ? " outside their process groups"
                              : swept.outsideGroups == 0
                                  ? " in their process groups"
                                  : " (" + std::to_string(swept.outsideGroups) + " outside their process groups)";
    pltrun::launcherConsole().write(
        "pltrun: killed " + std::to_string(swept.killed) + " process(es) the workers left behind" + where + "\n", true);
  }
};

}  // namespace

int main(int argc, char** argv) {
  // The lowest descriptor numbers, before anything else opens one: children start sharing
  // the descriptor table and keep only these (descriptor_slots.h).
  pltrun::DescriptorSlots::reserve();
  // A console reader that went away (pltrun ... | head) must not kill the launcher while
  // its workers run: writes then fail with EPIPE instead. Workers get a clean mask.
  sigset_t pipeSignal;
  sigemptyset(&pipeSignal);
  sigaddset(&pipeSignal, SIGPIPE);
  sigprocmask(SIG_BLOCK, &pipeSignal, nullptr);
  // An ignored SIGCHLD, inherited from whoever started us, would make the kernel reap
  // workers itself and hide their exit statuses.
  signal(SIGCHLD, SIG_DFL);

  try {
    if (pltrun::isStatusCommand(argc, argv)) return pltrun::runStatusCommand(argc, argv, pltrun::currentEnvironment());
    if (pltrun::isHealthCommand(argc, argv)) return pltrun::runHealthCommand(argc, argv, pltrun::currentEnvironment());
    // The one place the parser meets the process: its environment and the file system.
    auto parsed = pltrun::parseCommandLine(argc, argv, pltrun::currentEnvironment(), pltrun::readFileFromDisk,
                                           pltrun::fileExistsOnDisk, pltrun::readOwnFileFromDisk);
    if (auto* information = std::get_if<pltrun::InformationRequest>(&parsed)) {
      std::fputs(information->text.c_str(), stdout);
      return 0;
    }
    const auto& config = std::get<pltrun::LaunchConfig>(parsed);
    pltrun::configureLauncherLog(config.quiet, config.verbose);
    pltrun::adoptOrphanedDescendants();
    const SweepWhenDone sweep;  // however the launcher ends
    return pltrun::runLauncher(config);
  } catch (const pltrun::StoppedBySignal& stopped) {
    pltrun::launcherConsole().write(std::string("pltrun: ") + stopped.what() + "\n", true);
    return 128 + stopped.signal;
  } catch (const pltrun::Error& error) {
    // An error may quote what a store, a peer or a file said: it stays one "pltrun:" line.
    const std::string what = pltrun::terminalSafeLine(pltrun::withDescriptorAdvice(error.what()));
    pltrun::launcherConsole().write("pltrun: error: " + what + "\n", true);
    return exitStatusFor(error.code());
  } catch (const std::exception& error) {
    // Out of descriptors is no internal error, wherever it is met (epoll, a pipe, a socket).
    const std::string what = error.what();
    const char* kind = pltrun::saysOutOfDescriptors(what) ? "error" : "internal error";
    pltrun::launcherConsole().write(
        std::string("pltrun: ") + kind + ": " + pltrun::terminalSafeLine(pltrun::withDescriptorAdvice(what)) + "\n",
        true);
    return kLauncherFailure;
  }
}
