#include "launcher/placement/gpu_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "base/seconds_text.h"
#include "launcher/placement/lock_holder.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {
namespace {

constexpr const char* kChoosingFile = "pltrun-choosing.lock";
constexpr const char* kWithoutChoosing = "; choosing without it: the GPU locks alone keep jobs apart";
constexpr std::chrono::milliseconds kPoll{20};
constexpr std::string_view kSuffix = ".lock";

std::string lockFileStem(const std::string& key) { return "pltrun-gpu-" + key + "."; }

std::string ownLockFile(const std::string& key) {
  return lockFileStem(key) + std::to_string(geteuid()) + std::string(kSuffix);
}

// The user a lock file of GPU `key` is named after (pltrun-gpu-KEY.UID.lock); nothing for
// any other name. Keys hold no '.' followed by digits and ".lock" alone, so names do not mix.
std::optional<uid_t> lockFileUser(std::string_view name, const std::string& key) {
  const std::string stem = lockFileStem(key);
  if (name.size() <= stem.size() + kSuffix.size() || name.substr(0, stem.size()) != stem ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return std::nullopt;
  }
  const std::string_view digits = name.substr(stem.size(), name.size() - stem.size() - kSuffix.size());
  if (digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  const auto uid = parseInteger(digits);
  if (!uid || *uid > static_cast<long long>(static_cast<uid_t>(-1))) return std::nullopt;
  return static_cast<uid_t>(*uid);
}

// Opens the shared file `name` read-only (flock needs no more): an existing one as it is,
// without O_CREAT, which fs.protected_regular refuses on another user's file in a sticky
// directory; a missing one made mode 0644, so every user may open it.
int openSharedFile(int directory, const char* name) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = openat(directory, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0 || errno != ENOENT) return fd;
    fd = openat(directory, name, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      fchmod(fd, 0644);  // the umask may have narrowed it
      return fd;
    }
    if (errno != EEXIST) return -1;  // EEXIST: another pltrun made it meanwhile; open that one
  }
  return -1;
}

// This user's lock file `name`, made mode 0644 (other users open it read-only to check it).
// Anything else there, a link, a FIFO or someone else's file, is refused: its owner could
// delete it while a job holds it. -1 with `problem` set when refused.
int openOwnLockFile(int directory, const std::string& name, std::string& problem) {
  const int fd = openat(directory, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  const int error = errno;
  struct stat status {};
  const bool inspected =
      fd >= 0 ? fstat(fd, &status) == 0 : fstatat(directory, name.c_str(), &status, AT_SYMLINK_NOFOLLOW) == 0;
  if (inspected && status.st_uid != geteuid()) {
    problem = "made by user " + userNameText(status.st_uid) + ", not by you; ask them or an administrator to remove it";
  } else if (fd < 0) {
    problem = std::strerror(error);
  } else if (!inspected || !S_ISREG(status.st_mode)) {
    problem = "not a regular file";
  } else {
    fchmod(fd, 0644);  // the umask may have narrowed it
    return fd;
  }
  if (fd >= 0) close(fd);
  return -1;
}

// The file at `name` is still the one `fd` has open: not deleted or replaced meanwhile.
bool stillAtPath(int directory, const std::string& name, int fd) {
  struct stat opened {
  }, there{};
  return fstat(fd, &opened) == 0 && fstatat(directory, name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
         opened.st_dev == there.st_dev && opened.st_ino == there.st_ino;
}

std::optional<long long> pidIn(int fd) {
  char text[32] = {};
  const ssize_t size = pread(fd, text, sizeof text - 1, 0);
  if (size <= 0) return std::nullopt;
  std::string_view written(text, static_cast<size_t>(size));
  return parseInteger(trimSpaces(written.substr(0, written.find('\n'))));  // "PID\n"
}

// "PID\n", written over what is there and then cut to length, so a reader never finds it empty.
void writePid(int fd) {
  const std::string pid = std::to_string(getpid()) + "\n";
  if (pwrite(fd, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size()) &&
      ftruncate(fd, static_cast<off_t>(pid.size())) == 0) {
    // The pid only names the holder in another pltrun's refusal; the lock works without it.
  }
}

// Names who holds the lock on `fd` in `attempt`: the kernel's word (/proc/locks), which no
// one can forge, else the pid written in the file; the user where it is not this one
// (`fileOwner` where the kernel does not say). Anyone who may read a lock file can hold a
// flock on it: that shows as them, not as the file's owner.
void nameHolder(int fd, std::optional<uid_t> fileOwner, GpuLocks::Attempt& attempt) {
  const auto pid = flockHolderPid(fd);
  attempt.heldBy = pid ? *pid : pidIn(fd).value_or(0);
  const std::optional<uid_t> owner = pid ? processOwner(*pid) : fileOwner;
  if (owner && *owner != geteuid()) attempt.heldByUser = userNameText(*owner);
}

// User `user`'s lock file `name`: held by their pltrun or not. A file not owned by the user
// it is named after is nobody's lock (only its owner could have made it): passed over.
GpuLocks::Attempt otherUsersLock(int directory, const std::string& path, const char* name, uid_t user) {
  GpuLocks::Attempt attempt;
  const int fd = openat(directory, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error != ENOENT && error != ELOOP) {  // gone meanwhile, or a link: no one's lock
      attempt.problem = "has a lock file of user " + userNameText(user) + " pltrun cannot read (" + path + "/" + name +
                        ": " + std::strerror(error) + ")";
    }
    return attempt;
  }
  struct stat status {};
  if (fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && status.st_uid == user &&
      flock(fd, LOCK_SH | LOCK_NB) != 0) {
    nameHolder(fd, user, attempt);
  }
  close(fd);  // drops the shared lock of the check, if it was taken
  return attempt;
}

}  // namespace

GpuLocks::GpuLocks(const std::string& directory, std::chrono::milliseconds choosingWait)
    : directory_(directory), directoryFd_(openGpuLockDirectory(directory)) {
  waitForChoosing(choosingWait);
}

void GpuLocks::waitForChoosing(std::chrono::milliseconds wait) {
  const std::string path = directory_ + "/" + kChoosingFile;
  choosing_ = openSharedFile(directoryFd_, kChoosingFile);
  const std::string openError = choosing_ < 0 ? std::strerror(errno) : "";
  struct stat status {};
  if (choosing_ < 0 || fstat(choosing_, &status) != 0 || !S_ISREG(status.st_mode)) {
    notice_ = "--auto-select-gpus: cannot use " + path + " (" +
              (openError.empty() ? std::string("not a regular file") : openError) + ")" + kWithoutChoosing;
    finishChoosing();
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (flock(choosing_, LOCK_EX | LOCK_NB) != 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      notice_ = "--auto-select-gpus: " + flockHolderText(choosing_) + " has held " + path + " for " +
                secondsText(wait) + " s" + kWithoutChoosing;
      finishChoosing();
      return;
    }
    std::this_thread::sleep_for(kPoll);
  }
}

GpuLocks::GpuLocks(GpuLocks&& other) noexcept
    : directory_(std::move(other.directory_)),
      directoryFd_(std::exchange(other.directoryFd_, -1)),
      choosing_(std::exchange(other.choosing_, -1)),
      notice_(std::move(other.notice_)),
      held_(std::move(other.held_)) {
  other.held_.clear();
}

GpuLocks::~GpuLocks() {
  for (const auto& [key, fd] : held_) close(fd);
  if (choosing_ >= 0) close(choosing_);
  if (directoryFd_ >= 0) close(directoryFd_);
}

GpuLocks::Attempt GpuLocks::tryLock(const std::string& key) {
  Attempt attempt;
  const std::string name = ownLockFile(key);
  for (int tries = 0; tries < 3; ++tries) {
    const int fd = openOwnLockFile(directoryFd_, name, attempt.problem);
    if (fd < 0) {
      attempt.problem = "has a lock file pltrun cannot use (" + directory_ + "/" + name + ": " + attempt.problem + ")";
      return attempt;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {  // another pltrun of this user's holds it, most likely
      nameHolder(fd, std::nullopt, attempt);
      close(fd);
      return attempt;
    }
    if (!stillAtPath(directoryFd_, name, fd)) {  // deleted or replaced before the lock: lock the one there now
      close(fd);
      continue;
    }
    held_[key] = fd;  // held first, then checked: of two pltruns choosing at once, one sees the other
    Attempt other = otherUsersHold(key);
    if (other.heldBy || !other.problem.empty()) {
      release(key);
      return other;
    }
    writePid(fd);
    attempt.taken = true;
    return attempt;
  }
  attempt.problem = "has a lock file that was replaced while pltrun locked it (" + directory_ + "/" + name + ")";
  return attempt;
}

GpuLocks::Attempt GpuLocks::otherUsersHold(const std::string& key) {
  Attempt attempt;
  const int listing = openat(directoryFd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* entries = listing >= 0 ? fdopendir(listing) : nullptr;
  if (entries == nullptr) {
    attempt.problem = "could not be checked: cannot list " + directory_ + ": " + std::strerror(errno);
    if (listing >= 0) close(listing);
    return attempt;
  }
  while (const dirent* entry = readdir(entries)) {
    const auto user = lockFileUser(entry->d_name, key);
    if (!user || *user == geteuid()) continue;
    attempt = otherUsersLock(directoryFd_, directory_, entry->d_name, *user);
    if (attempt.heldBy || !attempt.problem.empty()) break;
  }
  closedir(entries);
  return attempt;
}

void GpuLocks::release(const std::string& key) {
  auto found = held_.find(key);
  if (found == held_.end()) return;
  close(found->second);
  held_.erase(found);
}

void GpuLocks::finishChoosing() {
  if (choosing_ >= 0) close(std::exchange(choosing_, -1));
}

}  // namespace pltrun
