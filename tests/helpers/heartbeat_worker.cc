// A C++ worker for the stall tests that beats through libpltrun: `heartbeat_worker STEPS
// STALL_RANK`: every rank calls pltrun::heartbeat(step) every 20 ms for STEPS steps and exits
// 0, except rank STALL_RANK, which stops after step 5 in a native sleep that never returns
// (in the first attempt only; later attempts run through).

#include <time.h>

#include <cstdlib>
#include <string>

#include "pltrun/heartbeat.h"

namespace {

int variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : 0;
}

void sleepMilliseconds(long milliseconds) {
  timespec delay{milliseconds / 1000, (milliseconds % 1000) * 1000000};
  nanosleep(&delay, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int steps = std::atoi(argv[1]);
  const int stallRank = std::atoi(argv[2]);
  const bool stalls = variable("RANK") == stallRank && variable("TORCHELASTIC_RESTART_COUNT") == 0;
  for (int step = 0; step < steps; ++step) {
    pltrun::heartbeat(step);
    if (stalls && step == 5) {
      for (;;) sleepMilliseconds(3600 * 1000);
    }
    sleepMilliseconds(20);
  }
  return 0;
}
