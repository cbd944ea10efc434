#pragma once
// The messages pltrun and its zygote (zygote.py) exchange, as values: what pltrun sends
// to start a worker, what the zygote answers. Pure, so the encoding is tested without a
// Python; the socket and the descriptors travel in zygote.cc.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "launcher/process/child_spawn.h"

namespace pltrun {

/// The zygote's setup, its first message after its code: what to import; the workers' argv,
/// from which it takes the sys.path[0] they would have; the environment pltrun gave it, which
/// it compares with the one it got (a wrapper's changes, repeated for every worker).
std::string zygoteConfigMessage(const std::vector<std::string>& preload, const std::vector<std::string>& workerArgv,
                                const std::vector<std::string>& environment);

/// What a worker's start says besides its descriptors. `attachedFds` names the descriptors
/// sent with it, in order ("stdin", "stdout", "stderr", then "guard" and "cgroup" when the
/// setup has them): the zygote matches them by name.
struct ForkRequest {
  const ChildSetup& setup;
  pid_t launcher;  ///< the worker waits until this process is its parent
  std::vector<std::string> attachedFds;
};
/// Empty when an argument or a variable is not UTF-8, which JSON cannot carry unchanged:
/// that worker is started cold.
std::string forkRequestMessage(const ForkRequest& request);

/// The names of the descriptors `setup` attaches, in the order they are sent.
std::vector<std::string> attachedDescriptorNames(const ChildSetup& setup);

/// An answer of the zygote: ready (after the preload), a started worker's pid, or why not.
struct ZygoteAnswer {
  bool ready = false;
  pid_t pid = -1;
  std::string error;  ///< one line; set when the answer is a refusal or unreadable
};
ZygoteAnswer parseZygoteAnswer(std::string_view message);

}  // namespace pltrun
