#pragma once
// The first stop signal an elastic agent received. Its one writer is the round loop's
// signal observer (elastic_agent.cc); the rendezvous waits and the round (round_run.cc)
// only read it, and end what they wait for once a signal is there.

namespace pltrun {

class StopRequest {
 public:
  /// Keeps `signal` when it is the first; returns whether it was.
  bool record(int signal) {
    if (signal_ != 0) return false;
    signal_ = signal;
    return true;
  }
  bool requested() const { return signal_ != 0; }
  /// The signal received; 0: none.
  int signal() const { return signal_; }

 private:
  int signal_ = 0;
};

}  // namespace pltrun
