#include "launcher/process/event_log.h"

#include <chrono>

namespace pltrun {

EventLog::EventLog(const std::optional<std::string>& path) {
  if (path) file_.emplace(*path, std::ios::app);
}

void EventLog::write(const std::string& name, nlohmann::json fields) {
  if (!file_) return;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  nlohmann::json line = {{"event", name}, {"time", now}};
  line.update(fields);
  *file_ << line.dump() << '\n';
  file_->flush();
}

}  // namespace pltrun
