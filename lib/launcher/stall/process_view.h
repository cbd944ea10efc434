#pragma once
// What /proc says of a worker's processes, for the stack sampler: a process's state and
// group, whether it catches a signal, and which process of a worker's group is its Python.

#include <sys/types.h>

#include <optional>
#include <string>

#include "launcher/process/process_stat.h"

namespace pltrun {

/// Whether `pid` has a handler for `signal` (SigCgt): a signal it does not catch would take
/// its default action, which for a real-time signal kills it.
bool catchesSignal(pid_t pid, int signal);

/// The oldest process of the worker's process group that catches `signal`: the worker's
/// Python (or the Python a wrapper script started), not its data loaders.
std::optional<pid_t> pythonProcessOf(pid_t workerPid, int signal);

/// A small file of /proc (wchan, stack), read to at most the stack text limit; empty when
/// it cannot be read.
std::string readProcText(pid_t pid, const std::string& name);

}  // namespace pltrun
