#pragma once
// Locks that keep two pltruns on one machine off the same GPU (--auto-select-gpus). Each GPU
// has a lock file, DIR/gpu-KEY.lock; a pltrun holds flock(2) on the files of the GPUs it
// chose for its whole life, with its pid written in them, and the kernel drops the locks
// when it exits, however it dies. Choosing itself is serialised by DIR/choosing.lock, so two
// pltruns started at the same moment choose one after the other, each seeing the other's
// GPUs as taken. Every descriptor is close-on-exec: workers never hold a lock.
//
// DIR: $PLTRUN_GPU_LOCK_DIR, else /run/lock/pltrun (shared by every user: mode 1777, the
// files 0666), else $XDG_RUNTIME_DIR/pltrun-gpus (this user's pltruns only).

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

namespace pltrun {

/// The directory of the GPU locks, made if missing. Throws InvalidArgument, one line, when
/// none can be made.
std::string gpuLockDirectory();

class GpuLocks {
 public:
  /// Waits for DIR/choosing.lock: while this object holds it, no other pltrun chooses.
  explicit GpuLocks(std::string directory);
  ~GpuLocks();  ///< releases every lock still held
  GpuLocks(GpuLocks&& other) noexcept;
  GpuLocks(const GpuLocks&) = delete;
  GpuLocks& operator=(const GpuLocks&) = delete;
  GpuLocks& operator=(GpuLocks&&) = delete;

  struct Attempt {
    bool taken = false;               ///< this pltrun holds the GPU's lock now
    std::optional<long long> heldBy;  ///< another pltrun holds it: its pid (0: not written)
    std::string problem;              ///< the lock file could not be used: why
  };
  /// Tries GPU `key`'s lock without waiting.
  Attempt tryLock(const std::string& key);
  /// Lets GPU `key`'s lock go (a GPU tried but not chosen).
  void release(const std::string& key);
  /// Writes this pltrun's pid into the locks kept and lets the other pltruns choose.
  void finishChoosing();

 private:
  std::string directory_;
  int choosing_ = -1;
  std::map<std::string, int> held_;  ///< GPU key -> its lock file's descriptor
};

}  // namespace pltrun
