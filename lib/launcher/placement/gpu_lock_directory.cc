#include "launcher/placement/gpu_lock_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/file_control.h"
#include "launcher/placement/lock_holder.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr const char* kSharedDirectory = "/run/lock";
constexpr const char* kElsewhere = "set PLTRUN_GPU_LOCK_DIR to a directory of your own or root's";

[[noreturn]] void refuse(const std::string& what) {
  throw Error(ErrorCode::InvalidArgument, "--auto-select-gpus: " + what);
}

// Why the directory `path` with status `status` cannot hold GPU locks; empty when it can.
std::string directoryProblem(const std::string& path, const struct stat& status) {
  const std::string quoted = "the GPU lock directory '" + path + "'";
  if (!ownedByYouOrRoot(status)) {
    return quoted + " belongs to user " + userNameText(status.st_uid) +
           ", who could delete the locks of anyone's jobs in it: remove it, or " + kElsewhere;
  }
  if (othersCanUnlinkIn(status)) {
    return quoted + " is writable by other users without the sticky bit (mode " + octalMode(status.st_mode) +
           "), so anyone could delete the GPU locks in it: run chmod +t '" + path + "', or " + kElsewhere;
  }
  return "";
}

// A directory of this user's: there, or made with mode 0700.
bool madeOrThere(const std::string& path) { return mkdir(path.c_str(), 0700) == 0 || errno == EEXIST; }

}  // namespace

int openGpuLockDirectory(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    struct stat entry {};
    if (lstat(path.c_str(), &entry) == 0 && S_ISLNK(entry.st_mode)) {
      refuse("the GPU lock directory '" + path +
             "' is a symbolic link, and pltrun keeps its locks only in a real directory (a link lets whoever made "
             "it choose where they go): remove it, or " +
             kElsewhere);
    }
    refuse("cannot open the GPU lock directory '" + path + "': " + std::strerror(error) + "; " + kElsewhere);
  }
  struct stat status {};
  std::string problem = fstat(fd, &status) != 0 ? std::string("cannot inspect '") + path + "': " + std::strerror(errno)
                                                : directoryProblem(path, status);
  if (!problem.empty()) {
    close(fd);
    refuse(problem);
  }
  return fd;
}

std::string gpuLockDirectory() {
  if (const char* chosen = std::getenv("PLTRUN_GPU_LOCK_DIR"); chosen != nullptr && *chosen != '\0') {
    if (madeOrThere(chosen)) return chosen;
    refuse(std::string("cannot make PLTRUN_GPU_LOCK_DIR '") + chosen + "': " + std::strerror(errno));
  }
  // The system's lock directory where it is fit (root's, sticky) and this user may write in it.
  struct stat shared {};
  if (lstat(kSharedDirectory, &shared) == 0 && S_ISDIR(shared.st_mode) &&
      directoryProblem(kSharedDirectory, shared).empty() && access(kSharedDirectory, W_OK | X_OK) == 0) {
    return kSharedDirectory;
  }
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime != nullptr && *runtime != '\0') {
    const std::string own = std::string(runtime) + "/pltrun-gpus";
    if (madeOrThere(own)) return own;
  }
  refuse(std::string("cannot keep GPU locks in ") + kSharedDirectory +
         " (missing, not writable, or writable by others without the sticky bit) nor in $XDG_RUNTIME_DIR; set "
         "PLTRUN_GPU_LOCK_DIR to a directory of your own");
}

}  // namespace pltrun
