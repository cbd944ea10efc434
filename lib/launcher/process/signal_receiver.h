#pragma once
// The signals pltrun forwards, received on the event loop together with their sender's pid:
// what boost::asio::signal_set does, plus siginfo's si_pid, which tells a signal Slurm's
// slurmstepd sent (and may have sent to the workers too) from one a user sent. The handler
// writes (signal, sender) to a pipe, async-signal-safe; the loop reads it. Several receivers
// may live at once (the unit tests run agents on threads); each gets the signals it added.

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <csignal>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pltrun {

struct ReceivedSignal {
  int signal = 0;
  pid_t sender = 0;  ///< 0: not sent by a process (the kernel, a terminal's line discipline)
};

class SignalReceiver {
 public:
  explicit SignalReceiver(boost::asio::io_context& context);
  /// After the last receiver of a signal, restores the action it had before the first.
  ~SignalReceiver();
  SignalReceiver(const SignalReceiver&) = delete;
  SignalReceiver& operator=(const SignalReceiver&) = delete;

  /// Catches `signal` from now on.
  void add(int signal);
  /// Calls `handler` on the loop for the next signal caught (one wait at a time).
  void asyncWait(std::function<void(const ReceivedSignal&)> handler);
  /// Before the loop runs (a blocking wait): the next signal caught, if one has come, taken
  /// without waiting. Not while an asyncWait is pending.
  std::optional<ReceivedSignal> poll();

 private:
  boost::asio::posix::stream_descriptor reader_;
  int slot_ = -1;             ///< this receiver's place in the handler's table
  std::vector<int> signals_;  ///< the signals added
  ReceivedSignal pending_;
};

/// A stop signal that ended a wait before the event loop runs (connecting to the rendezvous
/// store): main() exits with 128 + signal, as for a stop during the job.
struct StoppedBySignal : std::runtime_error {
  StoppedBySignal(int signal, const std::string& while_)
      : std::runtime_error("stopped by signal " + std::to_string(signal) + " " + while_), signal(signal) {}
  int signal;
};

/// Whether process `sender` is a slurmstepd (by its /proc comm): the sender of Slurm's signals.
bool sentBySlurmStepd(pid_t sender);

}  // namespace pltrun
