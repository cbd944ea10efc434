#include "launcher/output/private_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "base/read_to_end.h"
#include "launcher/output/console_writer.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw Error(ErrorCode::System, "cannot write " + path + ": " + why);
}

[[noreturn]] void refuseDirectory(const std::string& path) {
  throw Error(ErrorCode::System, "cannot use " + path +
                                     ": it is a symbolic link, or not a directory of this user (another user's run "
                                     "with the same id?); use another --rdzv-id or --log-dir");
}

}  // namespace

int openPrivateFileAt(int directoryFd, const std::string& name, WriteMode mode, const std::string& shown) {
  // No O_TRUNC here: what is found is checked before anything in it is lost.
  const int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (mode == WriteMode::Append ? O_APPEND : 0);
  const int fd = openat(directoryFd, name.c_str(), flags, 0600);
  if (fd < 0) {
    if (errno == ELOOP) refuse(shown, "it is a symbolic link (remove it, or use another --log-dir)");
    refuse(shown, strerror(errno));
  }
  struct stat status {};
  if (fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) || status.st_uid != geteuid()) {
    close(fd);
    refuse(shown, "it exists and is not a regular file of this user (remove it, or use another --log-dir)");
  }
  if (mode == WriteMode::Truncate && ftruncate(fd, 0) != 0) {
    const std::string why = strerror(errno);
    close(fd);
    refuse(shown, why);
  }
  return fd;
}

int openPrivateFile(const std::string& path, WriteMode mode) { return openPrivateFileAt(AT_FDCWD, path, mode, path); }

bool writeAndClose(int fd, const std::string& text) {
  const bool written = writeAll(fd, text.data(), text.size());
  const int saved = errno;
  close(fd);
  errno = saved;
  return written;
}

bool writePrivateFile(const std::string& path, const std::string& text) {
  int fd = -1;
  try {
    fd = openPrivateFile(path, WriteMode::Truncate);
  } catch (const Error&) {
    return false;
  }
  return writeAndClose(fd, text);
}

void createPrivateDirectories(const std::string& path) {
  const std::filesystem::path target(path);
  if (target.has_parent_path() && target.parent_path() != target) {
    struct stat parent {};
    if (lstat(target.parent_path().c_str(), &parent) != 0) createPrivateDirectories(target.parent_path().string());
  }
  close(openPrivateDirectoryAt(AT_FDCWD, path, path));
}

int openPrivateDirectoryAt(int directoryFd, const std::string& name, const std::string& shown) {
  if (mkdirat(directoryFd, name.c_str(), 0700) != 0 && errno != EEXIST) {
    throw Error(ErrorCode::System, "cannot create directory " + shown + ": " + strerror(errno));
  }
  const int fd = openat(directoryFd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  // A link or a file is refused as such; anything else (out of descriptors, EACCES) is
  // said as it is, not taken for another user's planted link.
  if (fd < 0 && errno != ELOOP && errno != ENOTDIR) {
    throw Error(ErrorCode::System, "cannot open directory " + shown + ": " + strerror(errno));
  }
  if (fd < 0) refuseDirectory(shown);
  struct stat status {};
  if (fstat(fd, &status) != 0 || !S_ISDIR(status.st_mode) || status.st_uid != geteuid()) {
    close(fd);
    refuseDirectory(shown);
  }
  // One that was there already (made by hand, or by an older run with a wider umask) is
  // made private too: what pltrun writes in it is not for other users.
  if ((status.st_mode & 077) != 0 && fchmod(fd, 0700) != 0) {
    const std::string why = strerror(errno);
    close(fd);
    throw Error(ErrorCode::System, "cannot make " + shown + " private (chmod 0700): " + why);
  }
  return fd;
}

std::optional<std::string> readRegularFileAt(int directoryFd, const std::string& name, size_t limit) {
  const int fd = openat(directoryFd, name.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat status {};
  std::optional<std::string> text;
  if (fstat(fd, &status) == 0 && S_ISREG(status.st_mode) && static_cast<size_t>(status.st_size) <= limit) {
    ReadToEnd read = readToEnd(fd, limit);
    if (read.complete()) text = std::move(read.content);  // not on an error, nor grown past the limit while read
  }
  close(fd);
  return text;
}

std::optional<std::string> readRegularFile(const std::string& path, size_t limit) {
  return readRegularFileAt(AT_FDCWD, path, limit);
}

}  // namespace pltrun
