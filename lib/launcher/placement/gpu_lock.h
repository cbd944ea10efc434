#pragma once
// Locks that keep two pltruns on one machine off the same GPU (--auto-select-gpus), whoever
// runs them. In the lock directory (gpu_lock_directory.h) each user has a lock file per GPU,
// pltrun-gpu-KEY.UID.lock, that only they (and root) can delete: the directory is sticky or
// private. A pltrun takes flock(2) on its user's file of a GPU, then checks every other
// user's file of that GPU and lets its own go if one is held; so of two pltruns choosing at
// once neither takes a GPU the other holds, and no one else can free a lock by deleting its
// file. The kernel drops the locks when a pltrun exits, however it dies. Every descriptor is
// close-on-exec: workers never hold a lock.
//
// Choosing is serialised by pltrun-choosing.lock, so two pltruns started at the same moment
// choose one after the other instead of each seeing the other's GPU as taken. That wait is
// bounded: whoever holds that lock longer is named, and pltrun chooses without it.
//
// Other users' files are opened read-only and never with O_CREAT: in a sticky directory,
// fs.protected_regular=1 (Debian's default) refuses O_CREAT on a file someone else owns,
// and flock needs no write access.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "launcher/placement/gpu_lock_directory.h"

namespace pltrun {

class GpuLocks {
 public:
  /// How long a pltrun waits for pltrun-choosing.lock: choosing takes milliseconds.
  static constexpr std::chrono::milliseconds kChoosingWait{5000};

  /// Opens `directory` (openGpuLockDirectory: throws its refusal) and waits up to
  /// `choosingWait` for its pltrun-choosing.lock: while this object holds it, no other pltrun
  /// chooses. Past the wait it goes on without it, and notice() says who held it.
  explicit GpuLocks(const std::string& directory, std::chrono::milliseconds choosingWait = kChoosingWait);
  ~GpuLocks();  ///< releases every lock still held
  GpuLocks(GpuLocks&& other) noexcept;
  GpuLocks(const GpuLocks&) = delete;
  GpuLocks& operator=(const GpuLocks&) = delete;
  GpuLocks& operator=(GpuLocks&&) = delete;

  struct Attempt {
    bool taken = false;  ///< this pltrun holds the GPU's lock now
    /// Another pltrun holds it: its pid, from /proc/locks, else from the file (0: unknown).
    std::optional<long long> heldBy;
    std::string heldByUser;  ///< the holder's user, where it is not this one
    std::string problem;     ///< a lock file could not be used: why
  };
  /// Tries GPU `key`'s lock without waiting.
  Attempt tryLock(const std::string& key);
  /// Lets GPU `key`'s lock go (a GPU tried but not chosen).
  void release(const std::string& key);
  /// Lets the other pltruns choose.
  void finishChoosing();
  /// Why choosing went on without pltrun-choosing.lock (one line), or empty.
  const std::string& notice() const { return notice_; }

 private:
  void waitForChoosing(std::chrono::milliseconds wait);
  /// Another user's pltrun holding GPU `key`, or a lock file that cannot be checked.
  Attempt otherUsersHold(const std::string& key);

  std::string directory_;
  int directoryFd_ = -1;
  int choosing_ = -1;
  std::string notice_;
  std::map<std::string, int> held_;  ///< GPU key -> this user's lock file's descriptor
};

}  // namespace pltrun
