#include "launcher/output/run_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "pltrun/error.h"

namespace pltrun {
namespace fs = std::filesystem;

std::string temporaryBase() {
  const char* base = std::getenv("TMPDIR");
  return base && *base ? base : "/tmp";
}

fs::path makeTemporaryDirectory(const std::string& stem, const std::string& base) {
  std::string pattern = (base.empty() ? temporaryBase() : base) + "/" + stem + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    throw Error(ErrorCode::System, "cannot create a temporary directory like " + pattern + ": " + strerror(errno));
  }
  return pattern;
}

namespace {

constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

bool sameFile(const struct stat& one, const struct stat& other) {
  return one.st_dev == other.st_dev && one.st_ino == other.st_ino;
}

void createDirectories(const fs::path& path) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error) throw Error(ErrorCode::System, "cannot create directory " + path.string() + ": " + error.message());
}

int openDirectory(const fs::path& path) {
  // --log-dir is the user's own choice of place: a link there is theirs to make.
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::System, "cannot open directory " + path.string() + ": " + strerror(errno));
  return fd;
}

// `wanted` in the open directory `parentFd` (at `parentPath`), or, when something is there
// already (an earlier run with the same id, whose logs must stay as they are), `wanted.1`,
// `wanted.2`, ...: a directory this run creates, private (0700), never one it found. mkdir
// is the test, so two runs starting at once cannot both take one name; the new directory
// is opened at once without following a link, and refused unless it is this user's, so
// nothing swapped in between is used. Returns its path and its handle.
std::pair<fs::path, int> makeNewDirectory(int parentFd, const fs::path& parentPath, const std::string& wanted) {
  constexpr int kMostRuns = 100000;
  for (int run = 0; run < kMostRuns; ++run) {
    const std::string candidate = run > 0 ? wanted + "." + std::to_string(run) : wanted;
    const fs::path path = parentPath / candidate;
    if (mkdirat(parentFd, candidate.c_str(), 0700) == 0) {
      return {path, openPrivateDirectoryAt(parentFd, candidate, path.string())};
    }
    if (errno != EEXIST) {
      throw Error(ErrorCode::System, "cannot create directory " + path.string() + ": " + strerror(errno));
    }
  }
  throw Error(ErrorCode::System, "cannot find a new directory name like " + (parentPath / wanted).string() + ".N: " +
                                     std::to_string(kMostRuns) + " runs are there; clean up or use another --log-dir");
}

// LOG_DIR/latest: a symbolic link to the newest run's directory (relative, so the tree can
// be moved), replaced in one step (a new link renamed over the old). Anything else named
// latest, the user's own file or a run whose id is "latest", is left as it is: pltrun never
// removes what it did not make. A link that cannot be made costs the run nothing.
void pointLatestAt(int logDirFd, const fs::path& logDir, const fs::path& root) {
  struct stat info {};
  if (fstatat(logDirFd, "latest", &info, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(info.st_mode)) return;
  const std::string fresh = ".latest." + std::to_string(getpid());
  unlinkat(logDirFd, fresh.c_str(), 0);
  if (symlinkat(root.lexically_relative(logDir).c_str(), logDirFd, fresh.c_str()) != 0) return;
  if (renameat(logDirFd, fresh.c_str(), logDirFd, "latest") != 0) unlinkat(logDirFd, fresh.c_str(), 0);
}

// The directory that holds the last part of `name` (a path under the run directory),
// opened from the run directory's handle one part at a time without following a link; with
// `make`, each part is made (0700) when missing and refused unless it is this user's
// (throwing), otherwise a missing or refused part leaves fd() -1.
class ParentDirectory {
 public:
  ParentDirectory(const RunFile& file, bool make) : root_(file.directory->handle()), fd_(root_) {
    const std::string& name = file.name;
    std::string shown = file.directory->root().string();
    size_t start = 0;
    for (size_t slash; fd_ >= 0 && (slash = name.find('/', start)) != std::string::npos; start = slash + 1) {
      const std::string part = name.substr(start, slash - start);
      shown += "/" + part;
      int next = -1;
      try {
        next = make ? openPrivateDirectoryAt(fd_, part, shown) : openat(fd_, part.c_str(), kDirectoryFlags);
      } catch (const Error&) {
        release();
        throw;
      }
      release();
      fd_ = next;
    }
    last_ = name.substr(start);
  }
  ~ParentDirectory() { release(); }
  ParentDirectory(const ParentDirectory&) = delete;
  ParentDirectory& operator=(const ParentDirectory&) = delete;

  int fd() const { return fd_; }
  const std::string& last() const { return last_; }

 private:
  void release() {
    if (fd_ >= 0 && fd_ != root_) close(fd_);
    fd_ = -1;
  }

  int root_;
  int fd_;
  std::string last_;
};

}  // namespace

std::string RunFile::path() const { return (directory->root() / name).string(); }

int RunFile::open(WriteMode mode) const {
  const ParentDirectory parent(*this, /*make=*/true);
  return openPrivateFileAt(parent.fd(), parent.last(), mode, path());
}

bool RunFile::write(const std::string& text) const {
  int fd = -1;
  try {
    fd = open(WriteMode::Truncate);
  } catch (const Error&) {
    return false;
  }
  return writeAndClose(fd, text);
}

std::optional<std::string> RunFile::read(size_t limit) const {
  if (!directory) return std::nullopt;
  const ParentDirectory parent(*this, /*make=*/false);
  if (parent.fd() < 0) return std::nullopt;
  return readRegularFileAt(parent.fd(), parent.last(), limit);
}

bool RunFile::exists() const {
  if (!directory) return false;
  const ParentDirectory parent(*this, /*make=*/false);
  struct stat status {};
  return parent.fd() >= 0 && fstatat(parent.fd(), parent.last().c_str(), &status, AT_SYMLINK_NOFOLLOW) == 0;
}

void RunFile::remove() const {
  if (!directory) return;
  const ParentDirectory parent(*this, /*make=*/false);
  if (parent.fd() >= 0) unlinkat(parent.fd(), parent.last().c_str(), 0);
}

RunDirectory::RunDirectory(const LaunchConfig& config, const std::string& runId, const std::string& nodeDirectory) {
  std::optional<std::string> logDir = config.logDir;
  // As torchrun: asking for log files (or filtered copies of them) without --log-dir logs
  // into a new temporary directory.
  const bool filtered = !config.duplicateStdoutFilters.empty() || !config.duplicateStderrFilters.empty();
  if (!logDir && (config.redirects.any() || config.tee.any() || filtered)) {
    logDir = makeTemporaryDirectory("pltrun-logs").string();
  }
  if (logDir) {
    createDirectories(*logDir);  // the user's, as their umask says; what pltrun adds is private
    keepsLogs_ = true;
    const int logDirFd = openDirectory(*logDir);
    try {
      if (nodeDirectory.empty()) {
        std::tie(root_, fd_) = makeNewDirectory(logDirFd, *logDir, runId);
      } else {
        // The run's directory is shared by the agents of one job; each agent's is its own.
        const fs::path runPath = fs::path(*logDir) / runId;
        const int runFd = openPrivateDirectoryAt(logDirFd, runId, runPath.string());
        try {
          std::tie(root_, fd_) = makeNewDirectory(runFd, runPath, nodeDirectory);
        } catch (const Error&) {
          close(runFd);
          throw;
        }
        close(runFd);
      }
    } catch (const Error&) {
      close(logDirFd);
      throw;
    }
    pointLatestAt(logDirFd, *logDir, root_);
    close(logDirFd);
  } else {
    root_ = makeTemporaryDirectory("pltrun-" + runId);
    fd_ = openPrivateDirectoryAt(AT_FDCWD, root_.string(), root_.string());
  }
  const std::string viaProc = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd_);
  struct stat seen {
  }, held{};
  const bool procShowsIt = stat(viaProc.c_str(), &seen) == 0 && fstat(fd_, &held) == 0 && sameFile(seen, held);
  handlePath_ = procShowsIt ? viaProc : root_.string();
}

RunDirectory::~RunDirectory() {
  // A temporary directory is removed by its path only while that path is still it.
  struct stat atPath {
  }, held{};
  if (!keepsLogs_ && lstat(root_.c_str(), &atPath) == 0 && fstat(fd_, &held) == 0 && sameFile(atPath, held)) {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  close(fd_);
}

RunFile RunDirectory::eventLog() const {
  if (!keepsLogs_) return {};
  return RunFile{this, "events.jsonl"};
}

RunFile RunDirectory::failureReport() const {
  if (!keepsLogs_) return {};
  return RunFile{this, "failure.json"};
}

RunFile RunDirectory::attemptFile(int attempt, const std::string& name) const {
  return RunFile{this, "attempt_" + std::to_string(attempt) + "/" + name};
}

RunFile RunDirectory::workerFile(int attempt, int localRank, const std::string& name) const {
  return attemptFile(attempt, std::to_string(localRank) + "/" + name);
}

RunFile RunDirectory::errorFile(int attempt, int localRank) const {
  if (!keepsLogs_)
    return RunFile{this, "attempt_" + std::to_string(attempt) + "." + std::to_string(localRank) + ".error.json"};
  RunFile file = workerFile(attempt, localRank, "error.json");
  const ParentDirectory made(file, /*make=*/true);  // the worker writes it, by the path it is given
  return file;
}

std::string RunDirectory::pathForWorkers(const RunFile& file) const { return handlePath_ + "/" + file.name; }

}  // namespace pltrun
