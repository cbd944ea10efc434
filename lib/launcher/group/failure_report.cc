#include "launcher/group/failure_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "base/terminal_text.h"
#include "base/utc_time_text.h"
#include "launcher/output/console_writer.h"
#include "launcher/output/event_log.h"
#include "launcher/output/private_file.h"

namespace pltrun {
namespace {

nlohmann::json failureJson(const WorkerFailure& failure) {
  nlohmann::json entry = {
      {"rank", failure.rank},
      {"local_rank", failure.localRank},
      {"attempt", failure.attempt},
      {"host", failure.host},
      {"pid", failure.pid},
      {"exit_code", failure.end.signal ? nlohmann::json() : nlohmann::json(failure.end.exitCode)},
      {"signal", failure.end.signal ? nlohmann::json(signalName(failure.end.signal)) : nlohmann::json()},
      {"time", utcTimeText(failure.time)},
      // null where the worker wrote none (torch's @record writes it on an exception)
      {"error_file", !failure.errorFile.empty() ? nlohmann::json(failure.errorFile) : nlohmann::json()},
  };
  if (failure.stall) entry["stall"] = failure.stall->json();
  if (!failure.expiredTimer.empty()) entry["expired_timer"] = failure.expiredTimer;
  if (failure.recorded) {
    entry["message"] = failure.recorded->message;
    entry["traceback"] = failure.recorded->traceback;
    entry["error_timestamp"] = failure.recorded->timestamp;
  } else {
    entry["stderr_tail"] = failure.stderrTail;
  }
  return entry;
}

// What the stall report on the console showed of the stacks, as it was.
std::string stallStackNote(const StallReport& stall) {
  const bool named = !stall.verdict.culprits.empty();
  const std::string whose = !named                               ? "every rank's stack"
                            : stall.verdict.culprits.size() == 1 ? "the culprit's stack"
                                                                 : "the culprits' stacks";
  const std::string json = "every rank's evidence goes to failure.json with --log-dir";
  if (stall.showsStack()) return "the stall report above has " + whose + " (" + json + ")";
  return "no stack could be read for the stall report above (" + json + ")";
}

}  // namespace

bool endedByStopSignal(const ProcessEnd& end, const std::vector<int>& sent) {
  if (end.succeeded()) return false;
  return std::any_of(sent.begin(), sent.end(), [&](int signal) { return end.shellStatus() == 128 + signal; });
}

// The worker controls its error file: a FIFO, a link to a file it cannot read, or gigabytes
// must neither block nor feed pltrun (readRegularFile reads none of them).
std::optional<RecordedError> parseIfRead(const std::optional<std::string>& text) {
  return text ? parseErrorFile(*text) : std::nullopt;
}

std::optional<RecordedError> readErrorFile(const std::string& path) {
  return parseIfRead(readRegularFile(path, kErrorFileLimit));
}

std::optional<RecordedError> readErrorFile(const RunFile& file) { return parseIfRead(file.read(kErrorFileLimit)); }

std::string WorkerFailure::describe() const {
  if (stall) return "stalled: " + stall->summary();
  std::string text = "ended with " + end.describe();
  if (!expiredTimer.empty()) text += " (" + expiredTimer + ")";
  return text;
}

std::string formatFailureReport(const WorkerFailure& root, const std::vector<WorkerFailure>& others) {
  std::string report = "pltrun: worker failure (root cause: the first worker to fail)\n";
  if (root.stall) {
    report = root.stall->verdict.culprits.empty()
                 ? "pltrun: stalled ranks (no culprit could be named; root cause: the first stalled rank)\n"
                 : "pltrun: stalled ranks (root cause: the culprit the stall report named)\n";
  }
  report += "  rank " + std::to_string(root.rank) + " (local rank " + std::to_string(root.localRank) + ") on " +
            root.host + ", pid " + std::to_string(root.pid) + ", attempt " + std::to_string(root.attempt) + "\n";
  if (root.stall) {
    report += "  " + root.describe() + "\n";
    report += "  stopped, then ended with " + root.end.describe() + " at " + utcTimeText(root.time) + "; " +
              stallStackNote(*root.stall) + "\n";
  } else {
    report += "  " + root.describe() + " at " + utcTimeText(root.time) + "\n";
  }
  if (root.recorded) {
    report += "  error: " + root.recorded->message + "\n";
    if (!root.recorded->traceback.empty()) {
      report += "  traceback:\n";
      size_t start = 0;
      const std::string& traceback = root.recorded->traceback;
      while (start < traceback.size()) {
        size_t stop = traceback.find('\n', start);
        if (stop == std::string::npos) stop = traceback.size();
        report += "    " + traceback.substr(start, stop - start) + "\n";
        start = stop + 1;
      }
    }
    if (!root.errorFile.empty()) report += "  error file: " + root.errorFile + "\n";
  } else if (!root.stderrTail.empty()) {
    report += "  last lines of its stderr:\n";
    for (const std::string& line : root.stderrTail) report += "    " + line + "\n";
  } else if (!root.stall) {
    report += "  it wrote nothing to stderr and no error file\n";
  }
  for (const WorkerFailure& other : others) {
    report += "  also: rank " + std::to_string(other.rank) + " " + other.describe() + "\n";
  }
  return report;
}

nlohmann::json failureReportJson(const WorkerFailure& root, const std::vector<WorkerFailure>& others) {
  nlohmann::json document = {
      {"schema", kEventSchema}, {"root_cause", failureJson(root)}, {"others", nlohmann::json::array()}};
  for (const WorkerFailure& other : others) document["others"].push_back(failureJson(other));
  return document;
}

}  // namespace pltrun

namespace pltrun {

int printFailureReport(WorkerFailure rootCause, const std::vector<WorkerFailure>& others, const RunFile& jsonFile) {
  return printFailureReport(std::move(rootCause), others, jsonFile, nlohmann::json::object());
}

int printFailureReport(WorkerFailure rootCause, const std::vector<WorkerFailure>& others, const RunFile& jsonFile,
                       const nlohmann::json& fields) {
  if (!jsonFile) rootCause.errorFile.clear();  // a temporary file, gone when pltrun exits
  std::string report = formatFailureReport(rootCause, others);
  if (jsonFile) {
    nlohmann::json document = failureReportJson(rootCause, others);
    document.update(fields);
    // Replacing invalid UTF-8 (a worker's stderr, a stack's path) rather than throwing.
    const std::string json = document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    if (jsonFile.write(json + "\n")) {
      report += "  report: " + jsonFile.path() + "\n";
    }
  }
  // A worker's words (its stderr, error file) and host names must not drive the terminal.
  launcherConsole().write(terminalSafe(report), true);  // after the workers' last lines, in order
  return rootCause.shellStatus();
}

}  // namespace pltrun
