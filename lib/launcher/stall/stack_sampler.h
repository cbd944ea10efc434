#pragma once
// Reads where workers are, without stopping them: a Python worker (one whose process
// catches the stack signal, set up by pltrun's Python hook) dumps every thread's stack with
// faulthandler into its stack file when signalled; another program is read by elfutils'
// eu-stack where it is installed, else by the kernel's /proc/PID/wchan and stack. A stopped
// process is reported as stopped. The signal is never sent to a process that does not
// catch it (the real-time signal's default action would kill it).

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "launcher/stall/stack_sample.h"

namespace pltrun {

struct StackTarget {
  pid_t workerPid = 0;    ///< the worker, leader of its process group
  std::string stackFile;  ///< where its Python processes dump (PLTRUN_STACK_FILE)
};

/// Samples every target at once (the Python dumps in parallel), within about `budget`
/// (eu-stack, where used, gets up to that much again per process).
std::vector<StackSample> sampleStacks(const std::vector<StackTarget>& targets, int stackSignal,
                                      std::chrono::milliseconds budget);

/// The real-time signal pltrun's Python hook registers faulthandler on (PLTRUN_STACK_SIGNAL).
int pythonStackSignal();

}  // namespace pltrun
