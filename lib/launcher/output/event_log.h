#pragma once
// pltrun's machine-readable account of a run, single node or elastic: one JSON object per
// line in LOG_DIR/RUN_ID/events.jsonl (run started, rendezvous complete, worker started,
// worker exited, stall, restart, node joined or left, job finished), each with "event",
// "time" (Unix seconds) and "schema" (kEventSchema). docs/EVENTS.md lists every event and
// field. Without --log-dir nothing is written.

#include <nlohmann/json.hpp>
#include <string>

#include "launcher/output/run_directory.h"

namespace pltrun {

/// The version of events.jsonl's and failure.json's layout: raised when a field changes
/// meaning or goes, not when one is added.
constexpr int kEventSchema = 1;

class EventLog {
 public:
  /// Appends to `file` (a private file: see private_file.h); no file, no log.
  explicit EventLog(const RunFile& file);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  /// Writes {"event": name, "time": ..., fields...} and flushes, so that a reader (or a
  /// crash) sees every event up to the last.
  void write(const std::string& name, nlohmann::json fields = nlohmann::json::object());

 private:
  int fd_ = -1;
};

}  // namespace pltrun
