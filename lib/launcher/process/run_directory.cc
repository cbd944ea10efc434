#include "launcher/process/run_directory.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "launcher/process/private_file.h"
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
    root_ = fs::path(*logDir) / runId;
    if (!nodeDirectory.empty()) root_ /= nodeDirectory;
    keepsLogs_ = true;
    createPrivateDirectories(root_.string());
  } else {
    root_ = makeTemporaryDirectory("pltrun-" + runId);
  }
}

RunDirectory::~RunDirectory() {
  std::error_code ignored;
  if (!keepsLogs_) fs::remove_all(root_, ignored);
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
