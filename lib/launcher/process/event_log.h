#pragma once
// The agent's machine-readable account of a run: one JSON object per line in
// LOG_DIR/.../events.jsonl (rendezvous complete, worker started, worker exited, restart,
// node joined or left, job finished), each with "event" and "time" (Unix seconds).
// Without --log-dir nothing is written.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace pltrun {

class EventLog {
 public:
  /// Appends to `path` (a private file: see private_file.h); no path, no log.
  explicit EventLog(const std::optional<std::string>& path);
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
