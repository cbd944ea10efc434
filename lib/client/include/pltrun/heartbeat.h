#pragma once
// Heartbeats for pltrun's hang detection (--stall-timeout): a worker calls heartbeat(step)
// once per training step, and pltrun, which reads the socket named by PLTRUN_HEARTBEAT,
// learns that the worker is alive and how far it got. The step is the progress counter
// that tells a hang's culprit (the rank behind the others) from its victims.
//
//   for (long long step = 0; step < steps; ++step) {
//     trainStep();
//     pltrun::heartbeat(step);
//   }
//
// Made to be called in the hot loop: a few microseconds (one sendto), it never blocks (a
// launcher that stops reading cannot stall the worker), never throws and reports no error,
// and does nothing outside pltrun (PLTRUN_HEARTBEAT unset or empty).

namespace pltrun {

/// Sends one heartbeat to PLTRUN_HEARTBEAT: the decimal `step`, or, for a negative `step`,
/// a heartbeat without a progress counter. Thread-safe.
void heartbeat(long long step = -1) noexcept;

}  // namespace pltrun
