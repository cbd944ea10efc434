#pragma once
// Low descriptor numbers reserved at start-up, so that a child can be started sharing the
// launcher's descriptor table instead of copying it. clone() without CLONE_FILES copies the
// whole table, every entry with a reference taken and dropped again when the child closes
// it: with thousands of workers or hosts (pipes and pidfds each), each start cost
// O(descriptors) and a launch O(n^2) (docs/PERFORMANCE.md, launch, thousands of workers). With the
// table shared, the child's first act is close_range(END, ~0U, CLOSE_RANGE_UNSHARE), which
// copies only the descriptors below END: the few the child needs, put in these slots by
// the parent just before the clone (child_spawn.cc).

#include <array>
#include <mutex>

namespace pltrun {

class DescriptorSlots {
 public:
  /// stdin, stdout, stderr, the orphan guard's pipe, the cgroup's cgroup.procs.
  static constexpr int kCount = 5;

  /// Reserves the slots (close-on-exec descriptors on /dev/null), as low as they come:
  /// call first thing in main. Without it spawnChild copies the table as before.
  static void reserve();
  /// Whether reserve() succeeded (and a kernel without CLOSE_RANGE_UNSHARE was not found).
  static bool available();
  /// A kernel older than 5.9 refused CLOSE_RANGE_UNSHARE: copy the table from now on.
  static void disable();

  /// For one spawn: the slot descriptors, and the table end the child keeps (one past the
  /// highest slot). Held under a lock: spawns on several threads take turns.
  struct Lease {
    std::unique_lock<std::mutex> lock;
    std::array<int, kCount> fds{};
    int tableEnd = 0;
  };
  static Lease lease();
  /// Points slot `index` of `lease` at `source` (close-on-exec); returns the slot, or -1
  /// for a source of -1.
  static int route(const Lease& lease, int index, int source);
  /// Back to /dev/null, so that the parent holds no extra reference to the child's pipes.
  static void release(const Lease& lease);
};

}  // namespace pltrun
