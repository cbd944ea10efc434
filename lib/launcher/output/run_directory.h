#pragma once
// Where a run keeps its files: the log tree under --log-dir/RUN_ID when logs are kept
// (-r/-t without --log-dir log to a new temporary directory, as torchrun does), otherwise
// a temporary directory for the workers' error files, removed when the run ends.
// Logs are never overwritten: a run whose RUN_ID directory exists already (an earlier run
// with the same id, a requeued Slurm job) gets RUN_ID.1, RUN_ID.2, ... (an elastic agent's
// own HOST_PID directory under the shared RUN_ID likewise); pltrun prints where, and
// --log-dir/latest is a symbolic link to the newest run's directory.
// --log-dir itself is created as the user's umask says; RUN_ID and everything pltrun makes
// under it are mode 0700 and must be this user's (a symbolic link planted in a shared
// --log-dir is refused, never followed).

#include <filesystem>
#include <optional>
#include <string>

#include "launcher/plan/launch_config.h"

namespace pltrun {

/// $TMPDIR, or /tmp when it is unset or empty.
std::string temporaryBase();
/// A new directory BASE/STEM-XXXXXX, mode 0700 (BASE: `base`, or temporaryBase()); throws
/// Error(System).
std::filesystem::path makeTemporaryDirectory(const std::string& stem, const std::string& base = "");

class RunDirectory {
 public:
  /// Creates the directory; throws Error(System) when it cannot.
  /// `nodeDirectory`, when given, is one more level under RUN_ID: each agent of an elastic
  /// job gets its own, so agents sharing a machine and a --log-dir never mix their files.
  RunDirectory(const LaunchConfig& config, const std::string& runId, const std::string& nodeDirectory = "");
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  bool keepsLogs() const { return keepsLogs_; }
  const std::filesystem::path& root() const { return root_; }
  /// ROOT/failure.json when logs are kept (the failure report's JSON); empty otherwise.
  std::optional<std::string> failureReportPath() const;
  /// ROOT/events.jsonl when logs are kept (docs/EVENTS.md); empty otherwise.
  std::optional<std::string> eventLogPath() const;
  /// ROOT/attempt_N/LOCAL_RANK, created on first use.
  std::filesystem::path workerDirectory(int attempt, int localRank) const;
  /// The worker's TORCHELASTIC_ERROR_FILE: error.json in its workerDirectory() when logs are
  /// kept; otherwise ROOT/attempt_N.LOCAL_RANK.error.json, so a run that keeps nothing makes
  /// and removes no directory per worker (ext4 directory operations were 0.4 ms of a
  /// 4-worker launch).
  std::string errorFile(int attempt, int localRank) const;

 private:
  std::filesystem::path root_;
  bool keepsLogs_ = false;
};

}  // namespace pltrun
