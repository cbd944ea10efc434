#include "rendezvous/store/server/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/file_control.h"
#include "base/read_to_end.h"
#include "pltrun/error.h"

namespace pltrun::rdzv {
namespace {

constexpr size_t kMaximumSecretFileSize = 64 * 1024;
constexpr const char* kHowToMake = "make one with: (umask 077; head -c 32 /dev/urandom | base64 > FILE)";

[[noreturn]] void refuse(const std::string& origin, const std::string& what) {
  throw Error(ErrorCode::InvalidArgument, origin + ": " + what);
}

// Reads the whole descriptor, refusing more than the limit.
std::string readAll(int fd, const std::string& origin, const std::string& name) {
  ReadToEnd read = readToEnd(fd, kMaximumSecretFileSize);
  if (read.error != 0) refuse(origin, "cannot read " + name + ": " + std::strerror(read.error));
  if (read.overLimit) refuse(origin, name + " is over 64 KiB: a secret file holds one line");
  return std::move(read.content);
}

// A file anyone else could read gives the secret away; one anyone else could write lets
// them choose it. ssh refuses private keys on the same grounds.
void checkOwnership(const struct stat& status, const std::string& origin, const std::string& path) {
  if (!S_ISREG(status.st_mode)) refuse(origin, "'" + path + "' is not a regular file");
  if ((status.st_mode & 077) != 0) {
    refuse(origin, "'" + path + "' is readable or writable by other users (mode " + octalMode(status.st_mode) +
                       "): run chmod 600 '" + path + "'");
  }
  if (!ownedByYouOrRoot(status)) {
    refuse(origin, "'" + path + "' belongs to another user (uid " + std::to_string(status.st_uid) +
                       "): the secret file must be your own");
  }
}

}  // namespace

std::string readSecretFile(const std::string& path, const std::string& origin, size_t minimumSize) {
  std::string secret;
  std::string name;
  if (path == "-") {
    name = "standard input";
    secret = readAll(STDIN_FILENO, origin, name);
  } else {
    name = "'" + path + "'";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) refuse(origin, "cannot open '" + path + "': " + std::strerror(errno) + "; " + kHowToMake);
    struct stat status {};
    if (fstat(fd, &status) != 0) {
      const int error = errno;
      ::close(fd);
      refuse(origin, "cannot inspect '" + path + "': " + std::strerror(error));
    }
    try {
      checkOwnership(status, origin, path);
      secret = readAll(fd, origin, name);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
  }
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty() && path == "-") {
    refuse(origin,
           "standard input is empty: the multi-host driver hands the job's secret there, so a "
           "--remote-command must pass standard input on (kubectl exec -i), or give every host the same "
           "secret_file");
  }
  if (secret.empty()) refuse(origin, name + " is empty; " + kHowToMake);
  if (secret.size() < minimumSize) {
    refuse(origin, name + " holds " + std::to_string(secret.size()) + " bytes; a secret needs at least " +
                       std::to_string(minimumSize) + " (" + kHowToMake + ")");
  }
  return secret;
}

}  // namespace pltrun::rdzv
