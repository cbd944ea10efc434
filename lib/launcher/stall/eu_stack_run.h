#pragma once
// One run of elfutils' eu-stack (found in PATH) on one process, for a stall report. It is
// started on the event loop's thread, where pltrun's reaper of adopted children runs too, so
// that the reaper never finds it before it is claimed as pltrun's own; it is then read,
// killed and reaped from the sampling thread through its pidfd, which reaches no other
// process even if something else reaped it and its pid was reused.

#include <sys/types.h>

#include <memory>
#include <string>

namespace pltrun {

class EuStackRun {
 public:
  /// Starts `eu-stack -p TARGET`; none when it cannot be started (not installed).
  static std::unique_ptr<EuStackRun> start(pid_t target);
  /// Kills it if it still runs, and reaps it.
  ~EuStackRun();
  EuStackRun(const EuStackRun&) = delete;
  EuStackRun& operator=(const EuStackRun&) = delete;

  /// Its output's read end (non-blocking), to wait on with poll.
  int output() const { return output_; }
  /// Reads what it has written so far; false once its output has ended (or reached the
  /// stack text limit): it has answered.
  bool readMore();
  const std::string& text() const { return text_; }

 private:
  EuStackRun(pid_t pid, int pidfd, int output) : pid_(pid), pidfd_(pidfd), output_(output) {}

  pid_t pid_;
  int pidfd_;
  int output_;
  std::string text_;
};

}  // namespace pltrun
