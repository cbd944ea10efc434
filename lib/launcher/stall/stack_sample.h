#pragma once
// Pure: where one stalled (or waiting) worker is, read from a stack dump: Python's
// faulthandler format, or elfutils' eu-stack for other programs. Each sample says where
// the main thread is and whether it waits inside a collective (torch.distributed, DDP's
// backward, NCCL, gloo, MPI), which is what tells a hang's culprit from its victims.

#include <string>

namespace pltrun {

struct StackSample {
  enum class Kind {
    Python,       ///< faulthandler's dump of every thread
    Native,       ///< eu-stack's dump of every thread
    Kernel,       ///< only the kernel's view: /proc/PID/wchan and /proc/PID/stack
    Stopped,      ///< the process is stopped (SIGSTOP, a debugger): it runs no code, not even a handler
    Unavailable,  ///< nothing could be read
  };
  Kind kind = Kind::Unavailable;
  std::string text;  ///< the dump as read (bounded)
  /// The main thread's innermost frame of the program's own code, with the library frame it
  /// is in when that is deeper: "train.py:33 in train_step", "train.py:18 in load (in
  /// threading.py:320 in wait)"; native: the innermost three functions.
  std::string where;
  bool inCollective = false;  ///< the main thread waits in a collective or for the device
  std::string waitingIn;      ///< for inCollective: "all_reduce", "backward", "ncclAllReduce"
  /// Why the program's own stack is missing, when a sampler was late: "eu-stack did not
  /// answer within 0.5 s" (the sample is then the kernel's view, where there is one).
  std::string noStack;
};

/// The most of a dump that is kept: a few hundred frames.
constexpr size_t kStackTextLimit = 64 * 1024;

/// From faulthandler's "Current thread 0x... (most recent call first):" dump.
StackSample pythonStackSample(const std::string& dump);
/// From eu-stack's "TID N:" / "#0  0x... function" dump of the process `pid`.
StackSample nativeStackSample(const std::string& dump, int pid);
/// What the kernel says the main thread waits in (wchan and /proc/PID/stack, either may be empty).
StackSample kernelStackSample(const std::string& wchan, const std::string& kernelStack);
/// A stopped process.
StackSample stoppedStackSample(char state);

/// "python", "native", "kernel", "stopped" or "none", for the JSON report.
const char* stackKindName(StackSample::Kind kind);

}  // namespace pltrun
