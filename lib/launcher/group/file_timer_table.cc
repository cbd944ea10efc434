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

void FileTimerTable::erase(std::map<std::pair<pid_t, std::string>, Timer>::iterator timer) {
  auto count = perWorker_.find(timer->second.rank);
  if (count != perWorker_.end() && --count->second == 0) perWorker_.erase(count);
  timers_.erase(timer);
}

TimerApplied FileTimerTable::apply(const FileTimerRequest& request, int rank) {
  const auto key = std::make_pair(request.pid, request.scopeId);
  const auto found = timers_.find(key);
  if (request.expirationTime < 0) {
    if (found != timers_.end()) erase(found);
    return TimerApplied::Released;
  }
  if (found != timers_.end()) {  // a new expiration time for a timer it holds
    found->second.request = request;
    return TimerApplied::Set;
  }
  const auto count = perWorker_.find(rank);
  if (count != perWorker_.end() && count->second >= limits_.perWorker) return TimerApplied::WorkerFull;
  if (timers_.size() >= limits_.total) return TimerApplied::TableFull;
  ++perWorker_[rank];
  timers_.emplace(key, Timer{request, rank});
  return TimerApplied::Set;
}

std::vector<FileTimerRequest> FileTimerTable::takeExpired(double now) {
  std::map<pid_t, FileTimerRequest> earliest;
  std::set<pid_t> expiredProcesses;
  for (const auto& [key, held] : timers_) {
    const FileTimerRequest& timer = held.request;
    if (timer.expirationTime > now) continue;
    expiredProcesses.insert(timer.pid);
    if (timer.signal <= 0) continue;
    auto found = earliest.find(timer.pid);
    if (found == earliest.end() || timer.expirationTime < found->second.expirationTime) earliest[timer.pid] = timer;
  }
  for (auto it = timers_.begin(); it != timers_.end();) {
    const auto next = std::next(it);
    if (expiredProcesses.count(it->first.first)) erase(it);
    it = next;
  }
  std::vector<FileTimerRequest> expired;
  for (const auto& [pid, timer] : earliest) expired.push_back(timer);
  return expired;
}

}  // namespace pltrun
