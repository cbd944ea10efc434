#include "launcher/output/run_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "launcher/output/private_file.h"
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

void createDirectories(const fs::path& path) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error) throw Error(ErrorCode::System, "cannot create directory " + path.string() + ": " + error.message());
}

// `wanted`, or, when something is there already (an earlier run with the same id, whose
// logs must stay as they are), `wanted.1`, `wanted.2`, ...: a directory this run creates,
// private (0700), never one it found. mkdir is the test, so two runs starting at once
// cannot both take one name, and a symbolic link planted there is never followed.
fs::path makeNewDirectory(const fs::path& wanted) {
  constexpr int kMostRuns = 100000;
  for (int run = 0; run < kMostRuns; ++run) {
    fs::path candidate = wanted;
    if (run > 0) candidate += "." + std::to_string(run);
    if (mkdir(candidate.c_str(), 0700) == 0) return candidate;
    if (errno != EEXIST) {
      throw Error(ErrorCode::System, "cannot create directory " + candidate.string() + ": " + strerror(errno));
    }
  }
  throw Error(ErrorCode::System, "cannot find a new directory name like " + wanted.string() + ".N: " +
                                     std::to_string(kMostRuns) + " runs are there; clean up or use another --log-dir");
}

// LOG_DIR/latest: a symbolic link to the newest run's directory (relative, so the tree can
// be moved), replaced in one step (a new link renamed over the old). Anything else named
// latest, the user's own file or a run whose id is "latest", is left as it is: pltrun never
// removes what it did not make. A link that cannot be made costs the run nothing.
void pointLatestAt(const fs::path& logDir, const fs::path& root) {
  const fs::path link = logDir / "latest";
  struct stat info {};
  if (lstat(link.c_str(), &info) == 0 && !S_ISLNK(info.st_mode)) return;
  const fs::path fresh = logDir / (".latest." + std::to_string(getpid()));
  unlink(fresh.c_str());
  if (symlink(root.lexically_relative(logDir).c_str(), fresh.c_str()) != 0) return;
  if (rename(fresh.c_str(), link.c_str()) != 0) unlink(fresh.c_str());
}

}  // namespace

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
    if (nodeDirectory.empty()) {
      root_ = makeNewDirectory(fs::path(*logDir) / runId);
    } else {
      // The run's directory is shared by the agents of one job; each agent's is its own.
      createPrivateDirectories((fs::path(*logDir) / runId).string());
      root_ = makeNewDirectory(fs::path(*logDir) / runId / nodeDirectory);
    }
    pointLatestAt(*logDir, root_);
  } else {
    root_ = makeTemporaryDirectory("pltrun-" + runId);
  }
}

RunDirectory::~RunDirectory() {
  std::error_code ignored;
  if (!keepsLogs_) fs::remove_all(root_, ignored);
}

std::optional<std::string> RunDirectory::eventLogPath() const {
  if (!keepsLogs_) return std::nullopt;
  return (root_ / "events.jsonl").string();
}

std::optional<std::string> RunDirectory::failureReportPath() const {
  if (!keepsLogs_) return std::nullopt;
  return (root_ / "failure.json").string();
}

fs::path RunDirectory::workerDirectory(int attempt, int localRank) const {
  fs::path path = root_ / ("attempt_" + std::to_string(attempt)) / std::to_string(localRank);
  createPrivateDirectories(path.string());
  return path;
}

std::string RunDirectory::errorFile(int attempt, int localRank) const {
  if (keepsLogs_) return (workerDirectory(attempt, localRank) / "error.json").string();
  return (root_ / ("attempt_" + std::to_string(attempt) + "." + std::to_string(localRank) + ".error.json")).string();
}

}  // namespace pltrun
