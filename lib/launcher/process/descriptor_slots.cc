#include "launcher/process/descriptor_slots.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace pltrun {
namespace {

std::mutex slotsMutex;
std::array<int, DescriptorSlots::kCount> slots{-1, -1, -1, -1, -1};
int placeholder = -1;  ///< /dev/null, what an idle slot refers to
std::atomic<bool> usable{false};

}  // namespace

void DescriptorSlots::reserve() {
  std::lock_guard<std::mutex> lock(slotsMutex);
  if (usable) return;
  placeholder = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (placeholder < 0) return;
  for (int& slot : slots) {
    slot = fcntl(placeholder, F_DUPFD_CLOEXEC, 0);
    if (slot < 0) return;
  }
  usable = true;
}

bool DescriptorSlots::available() { return usable; }

void DescriptorSlots::disable() { usable = false; }

DescriptorSlots::Lease DescriptorSlots::lease() {
  Lease lease;
  lease.lock = std::unique_lock<std::mutex>(slotsMutex);
  lease.fds = slots;
  lease.tableEnd = *std::max_element(slots.begin(), slots.end()) + 1;
  return lease;
}

int DescriptorSlots::route(const Lease& lease, int index, int source) {
  if (source < 0) return -1;
  if (dup3(source, lease.fds[index], O_CLOEXEC) < 0) return -1;
  return lease.fds[index];
}

void DescriptorSlots::release(const Lease& lease) {
  for (int slot : lease.fds) dup3(placeholder, slot, O_CLOEXEC);
}

}  // namespace pltrun
