#include "launcher/placement/gpu_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr const char* kSharedDirectory = "/run/lock/pltrun";

// A directory usable for the locks: there (made, mode `mode`, if missing) and writable.
bool usableDirectory(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) == 0) {
    chmod(path.c_str(), mode);  // the umask narrowed it
  } else if (errno != EEXIST) {
    return false;
  }
  struct stat status {};
  return stat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode) && access(path.c_str(), W_OK | X_OK) == 0;
}

// Opens (making it if missing) a lock file every user may lock; -1 with errno set on failure.
int openLockFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd >= 0) fchmod(fd, 0666);  // fails harmlessly on another user's file
  return fd;
}

std::optional<long long> pidIn(int fd) {
  char text[32] = {};
  const ssize_t size = pread(fd, text, sizeof text - 1, 0);
  if (size <= 0) return std::nullopt;
  std::string_view written(text, static_cast<size_t>(size));
  return parseInteger(trimSpaces(written.substr(0, written.find('\n'))));  // "PID\n"
}

}  // namespace

std::string gpuLockDirectory() {
  if (const char* chosen = std::getenv("PLTRUN_GPU_LOCK_DIR"); chosen != nullptr && *chosen != '\0') {
    if (usableDirectory(chosen, 0700)) return chosen;
    throw Error(ErrorCode::InvalidArgument, std::string("--auto-select-gpus: PLTRUN_GPU_LOCK_DIR '") + chosen +
                                                "' is not a directory pltrun can write its GPU locks in");
  }
  if (usableDirectory(kSharedDirectory, 01777)) return kSharedDirectory;
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime != '\0') {
    const std::string own = std::string(runtime) + "/pltrun-gpus";
    if (usableDirectory(own, 0700)) return own;
  }
  throw Error(ErrorCode::InvalidArgument, std::string("--auto-select-gpus: cannot write GPU locks in ") +
                                              kSharedDirectory +
                                              " or $XDG_RUNTIME_DIR; set PLTRUN_GPU_LOCK_DIR to a writable directory");
}

GpuLocks::GpuLocks(std::string directory) : directory_(std::move(directory)) {
  const std::string path = directory_ + "/choosing.lock";
  choosing_ = openLockFile(path);
  if (choosing_ < 0) {
    throw Error(ErrorCode::InvalidArgument,
                "--auto-select-gpus: cannot open " + path + ": " + std::strerror(errno) + "; set PLTRUN_GPU_LOCK_DIR");
  }
  while (flock(choosing_, LOCK_EX) != 0 && errno == EINTR) {
  }
}

GpuLocks::GpuLocks(GpuLocks&& other) noexcept
    : directory_(std::move(other.directory_)),
      choosing_(std::exchange(other.choosing_, -1)),
      held_(std::move(other.held_)) {
  other.held_.clear();
}

GpuLocks::~GpuLocks() {
  for (const auto& [key, fd] : held_) close(fd);
  if (choosing_ >= 0) close(choosing_);
}

GpuLocks::Attempt GpuLocks::tryLock(const std::string& key) {
  Attempt attempt;
  const std::string path = directory_ + "/gpu-" + key + ".lock";
  const int fd = openLockFile(path);
  if (fd < 0) {
    attempt.problem = "has a lock file pltrun cannot open (" + path + ": " + std::strerror(errno) + ")";
    return attempt;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
    held_[key] = fd;
    attempt.taken = true;
    return attempt;
  }
  attempt.heldBy = pidIn(fd).value_or(0);
  close(fd);
  return attempt;
}

void GpuLocks::release(const std::string& key) {
  auto found = held_.find(key);
  if (found == held_.end()) return;
  close(found->second);
  held_.erase(found);
}

void GpuLocks::finishChoosing() {
  const std::string pid = std::to_string(getpid()) + "\n";
  for (const auto& [key, fd] : held_) {
    if (ftruncate(fd, 0) == 0 && pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      // The pid only names the holder in another pltrun's refusal; the lock works without it.
    }
  }
  if (choosing_ >= 0) close(std::exchange(choosing_, -1));
}

}  // namespace pltrun
