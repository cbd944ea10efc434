#include "launcher/group/file_timer_table.h"

#include <signal.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

namespace pltrun {

std::optional<FileTimerRequest> parseFileTimerRequest(std::string_view line) {
  const nlohmann::json request = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!request.is_object()) return std::nullopt;
  const auto pid = request.find("pid");
  const auto scope = request.find("scope_id");
  const auto expiration = request.find("expiration_time");
  const auto signal = request.find("signal");
  if (pid == request.end() || !pid->is_number_integer() || scope == request.end() || !scope->is_string() ||
      expiration == request.end() || !expiration->is_number() || signal == request.end() ||
      !signal->is_number_integer()) {
    return std::nullopt;
  }
  FileTimerRequest parsed;
  const long long pidValue = pid->get<long long>();
  const long long signalValue = signal->get<long long>();
  parsed.expirationTime = expiration->get<double>();
  if (pidValue <= 0 || pidValue > 4194304 || signalValue < 0 || signalValue >= NSIG ||
      !std::isfinite(parsed.expirationTime)) {
    return std::nullopt;
  }
  parsed.pid = static_cast<pid_t>(pidValue);
  parsed.signal = static_cast<int>(signalValue);
  parsed.scopeId = scope->get<std::string>();
  return parsed;
}

void FileTimerTable::apply(const FileTimerRequest& request) {
  const auto key = std::make_pair(request.pid, request.scopeId);
  if (request.expirationTime < 0) {
    timers_.erase(key);
  } else {
    timers_[key] = request;
  }
}

std::vector<FileTimerRequest> FileTimerTable::takeExpired(double now) {
  std::map<pid_t, FileTimerRequest> earliest;
  std::set<pid_t> expiredProcesses;
  for (const auto& [key, timer] : timers_) {
    if (timer.expirationTime > now) continue;
    expiredProcesses.insert(timer.pid);
    if (timer.signal <= 0) continue;
    auto found = earliest.find(timer.pid);
    if (found == earliest.end() || timer.expirationTime < found->second.expirationTime) earliest[timer.pid] = timer;
  }
  for (auto it = timers_.begin(); it != timers_.end();) {
    it = expiredProcesses.count(it->first.first) ? timers_.erase(it) : std::next(it);
  }
  std::vector<FileTimerRequest> expired;
  for (const auto& [pid, timer] : earliest) expired.push_back(timer);
  return expired;
}

}  // namespace pltrun
