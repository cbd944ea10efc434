#pragma once
// What a worker group runs on: the processes it starts and the clock its deadlines follow.
// The launcher's modes use the real ones; the unit tests pass fakes (tests/unit/
// fake_process_runtime.h).

#include "launcher/process/process_seam.h"
#include "launcher/process/timer_seam.h"

namespace pltrun {

struct ProcessRuntime {
  ProcessStarter& starter;
  TimerFactory& timers;
};

/// Real children (WorkerProcess) and steady_timer; shared, stateless.
ProcessRuntime realProcessRuntime();

}  // namespace pltrun
