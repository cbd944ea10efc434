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
// The directory is opened once, when it is made, and every file and directory under it is
// made and opened through that handle (openat, one name at a time, no link followed), never
// by its path: another user who renames it in a shared --log-dir and plants a link at its
// name mid-run leads nothing pltrun writes elsewhere. The workers' error files are named to
// them through the same handle (/proc/PID/fd/N/..., where /proc shows it).

#include <filesystem>
#include <optional>
#include <string>

#include "launcher/output/private_file.h"
#include "launcher/plan/launch_config.h"

namespace pltrun {

/// $TMPDIR, or /tmp when it is unset or empty.
std::string temporaryBase();
/// A new directory BASE/STEM-XXXXXX, mode 0700 (BASE: `base`, or temporaryBase()); throws
/// Error(System).
std::filesystem::path makeTemporaryDirectory(const std::string& stem, const std::string& base = "");

class RunDirectory;

/// A file of a run directory, by its name under it (e.g. "attempt_1/0/stdout.log"): pltrun
/// reaches it through the directory's handle, never by its path.
struct RunFile {
  const RunDirectory* directory = nullptr;  ///< null: no file
  std::string name;

  explicit operator bool() const { return directory != nullptr; }
  /// ROOT/name: where it is, for messages and reports.
  std::string path() const;
  /// As openPrivateFile; the directories on the way are made (0700) when missing.
  int open(WriteMode mode) const;
  /// Writes `text` in place of what is there; false when it could not.
  bool write(const std::string& text) const;
  /// As readRegularFile; none without a file.
  std::optional<std::string> read(size_t limit) const;
  bool exists() const;  ///< false without a file
  void remove() const;  ///< nothing without a file
};

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
  /// Where the directory was made (it is used through its handle, wherever it is now).
  const std::filesystem::path& root() const { return root_; }
  /// The directory's handle (O_DIRECTORY), open for the run's whole life.
  int handle() const { return fd_; }
  /// ROOT/failure.json when logs are kept (the failure report's JSON); none otherwise.
  RunFile failureReport() const;
  /// ROOT/events.jsonl when logs are kept (docs/EVENTS.md); none otherwise.
  RunFile eventLog() const;
  /// ROOT/attempt_N/NAME, e.g. the attempt's filtered_stdout.log.
  RunFile attemptFile(int attempt, const std::string& name) const;
  /// ROOT/attempt_N/LOCAL_RANK/NAME, e.g. stdout.log.
  RunFile workerFile(int attempt, int localRank, const std::string& name) const;
  /// The worker's TORCHELASTIC_ERROR_FILE, its directory made: error.json beside its logs
  /// when logs are kept; otherwise ROOT/attempt_N.LOCAL_RANK.error.json, so a run that keeps
  /// nothing makes and removes no directory per worker (directory operations are a
  /// visible part of a launch; docs/PERFORMANCE.md, launch).
  RunFile errorFile(int attempt, int localRank) const;
  /// The path a worker is given for `file`: through this process's handle
  /// (/proc/PID/fd/N/NAME) where /proc shows it, so that no rename or planted link leads
  /// the worker's writes elsewhere either; ROOT/NAME otherwise.
  std::string pathForWorkers(const RunFile& file) const;

 private:
  std::filesystem::path root_;
  std::string handlePath_;  ///< /proc/PID/fd/N, or root_ where /proc does not show it
  int fd_ = -1;
  bool keepsLogs_ = false;
};

}  // namespace pltrun
