#pragma once
// Reads where workers are, without stopping them and without holding up the event loop: a
// Python worker (one whose process catches the stack signal, set up by pltrun's Python hook)
// dumps every thread's stack with faulthandler into its stack file when signalled; another
// program is read by elfutils' eu-stack where it is installed, else by the kernel's
// /proc/PID/wchan and stack. A stopped process is reported as stopped. The signal is never
// sent to a process that does not catch it (the real-time signal's default action would
// kill it).
//
// Every target is sampled at once, each sampler with the same deadline: a worker in
// uninterruptible sleep (`D`), which neither runs its dump handler nor lets eu-stack in,
// costs the report that deadline, not that deadline per worker. The waiting is done on a
// thread of its own; the event loop meanwhile goes on reading heartbeats and supervising.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "launcher/process/timer_seam.h"
#include "launcher/stall/stack_sample.h"

namespace pltrun {

struct StackTarget {
  pid_t workerPid = 0;    ///< the worker, leader of its process group
  std::string stackFile;  ///< where its Python processes dump (PLTRUN_STACK_FILE)
};

/// How long a sampler may take: a Python dump that has not arrived, or an eu-stack that has
/// not answered, by then is reported as missing (the kernel's view stands in) and eu-stack
/// is killed. With the check interval, a stall's report comes within --stall-timeout + 1 s.
constexpr std::chrono::milliseconds kStackSampleDeadline{500};
/// After the deadline, how long the event loop waits for the sampling thread before the
/// report goes out without the samples it has not published (a /proc read that hangs).
constexpr std::chrono::milliseconds kStackDeliveryMargin{150};

class StackSampling {
 public:
  using OnStacks = std::function<void(std::vector<StackSample>)>;

  /// Starts sampling every target at once: on the calling thread, quickly, the Python
  /// processes are signalled and one eu-stack is started per other target; a thread then
  /// waits for them. `onStacks` runs once, on `timer`'s event loop, with one sample per
  /// target, within `deadline` + kStackDeliveryMargin whatever state the targets are in;
  /// never once this object is gone.
  StackSampling(std::unique_ptr<Timer> timer, const std::vector<StackTarget>& targets, int stackSignal,
                std::chrono::milliseconds deadline, OnStacks onStacks);
  ~StackSampling();
  StackSampling(const StackSampling&) = delete;
  StackSampling& operator=(const StackSampling&) = delete;

  struct Shared;

 private:
  void checkDone();
  void deliver();

  std::unique_ptr<Timer> timer_;
  std::shared_ptr<Shared> shared_;  ///< with the thread, which may outlive this
  std::chrono::steady_clock::time_point giveUpAt_;
  std::chrono::milliseconds deadline_;
  OnStacks onStacks_;
};

/// The real-time signal pltrun's Python hook registers faulthandler on (PLTRUN_STACK_SIGNAL).
int pythonStackSignal();

}  // namespace pltrun
