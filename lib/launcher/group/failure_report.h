#pragma once
// The short report printed for the first worker failure (the root cause), written also as
// JSON next to the logs. torch's `@record` error files are read when the worker wrote one,
// so Python tracebacks are shown instead of "exit code 1".

#include <sys/types.h>

#include <chrono>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/group/error_file.h"
#include "launcher/output/run_directory.h"
#include "launcher/process/worker_process.h"
#include "launcher/stall/stall_report.h"

namespace pltrun {

struct WorkerFailure {
  int rank = 0;
  int localRank = 0;
  int attempt = 0;
  std::string host;
  pid_t pid = 0;
  ProcessEnd end;
  std::chrono::system_clock::time_point time;
  std::string errorFile;  ///< where the worker's error file is, when it wrote one
  std::optional<RecordedError> recorded;
  std::vector<std::string> stderrTail;  ///< used when there is no recorded error
  std::optional<StallReport> stall;     ///< it was stopped because ranks stalled
  std::string expiredTimer;             ///< torch's FileTimer killed it: which scope, which signal

  /// The job's exit status for this root cause: kStalledExitStatus for a stall, otherwise
  /// the worker's own (128 + N for signal N).
  int shellStatus() const { return stall ? kStalledExitStatus : end.shellStatus(); }
  /// "ended with exit code 3", "stalled (...)", "was killed by its FileTimer (...)".
  std::string describe() const;
};

/// Whether a worker that ended as `end` was stopped by pltrun rather than failing on its own:
/// killed by one of the stop signals pltrun sent it (`sent`: SIGTERM, SIGKILL, a forwarded
/// SIGINT...), or exited with the status a shell gives for one (128 + N). The report's
/// `others` (docs/EVENTS.md) leaves such workers out.
bool endedByStopSignal(const ProcessEnd& end, const std::vector<int>& sent);

/// parseErrorFile of the file at `path`. Empty when missing, unreadable, not a regular file
/// (a FIFO is never waited on, a symbolic link never followed) or over kErrorFileLimit.
std::optional<RecordedError> readErrorFile(const std::string& path);
/// The same for a worker's error file in the run directory, read through its handle.
std::optional<RecordedError> readErrorFile(const RunFile& file);

/// The human-readable report: what failed, where, how, and the error or last stderr lines.
std::string formatFailureReport(const WorkerFailure& rootCause, const std::vector<WorkerFailure>& others);

/// Prints the report to stderr and, when `jsonFile` is given, writes its JSON there (its
/// path is then named in the report). Returns the root cause's shell status.
int printFailureReport(WorkerFailure rootCause, const std::vector<WorkerFailure>& others, const RunFile& jsonFile);
/// The same, with `fields` added to the JSON document's top level (no_progress).
int printFailureReport(WorkerFailure rootCause, const std::vector<WorkerFailure>& others, const RunFile& jsonFile,
                       const nlohmann::json& fields);

nlohmann::json failureReportJson(const WorkerFailure& rootCause, const std::vector<WorkerFailure>& others);

}  // namespace pltrun
