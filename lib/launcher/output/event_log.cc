#include "launcher/output/event_log.h"

#include <unistd.h>

#include <chrono>

#include "launcher/output/console_writer.h"

namespace pltrun {

EventLog::EventLog(const RunFile& file) {
  if (file) fd_ = file.open(WriteMode::Append);
}

EventLog::~EventLog() {
  if (fd_ >= 0) close(fd_);
}

void EventLog::write(const std::string& name, nlohmann::json fields) {
  if (fd_ < 0) return;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  nlohmann::json line = {{"event", name}, {"time", now}, {"schema", kEventSchema}};
  line.update(fields);
  // One write per line (O_APPEND): a reader, or a crash, sees every event up to the last.
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
  writeAll(fd_, text.data(), text.size());
}

}  // namespace pltrun
