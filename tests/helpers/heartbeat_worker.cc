// A C++ worker for the stall tests that beats through libpltrun: `heartbeat_worker STEPS
// STALL_RANKS`: every rank calls pltrun::heartbeat(step) every 20 ms for STEPS steps and exits
// 0, except the ranks of STALL_RANKS (one rank, or a comma list: "0,1,2"), which stop after
// step 5 in a native sleep that never returns (in the first attempt only; later attempts run
// through).

#include <time.h>

#include <cstdlib>
#include <sstream>
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

bool listed(const std::string& ranks, int rank) {
  std::istringstream items(ranks);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (!item.empty() && std::atoi(item.c_str()) == rank) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int steps = std::atoi(argv[1]);
  const bool stalls = listed(argv[2], variable("RANK")) && variable("TORCHELASTIC_RESTART_COUNT") == 0;
  for (int step = 0; step < steps; ++step) {
    pltrun::heartbeat(step);
    if (stalls && step == 5) {
      for (;;) sleepMilliseconds(3600 * 1000);
    }
    sleepMilliseconds(20);
  }
  return 0;
}
