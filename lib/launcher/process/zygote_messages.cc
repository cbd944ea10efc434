#include "launcher/process/zygote_messages.h"

#include <nlohmann/json.hpp>

namespace pltrun {
namespace {

std::vector<std::string> nullTerminatedList(char* const* entries) {
  std::vector<std::string> list;
  for (char* const* entry = entries; entry != nullptr && *entry != nullptr; ++entry) list.emplace_back(*entry);
  return list;
}

std::vector<int> cpuList(const cpu_set_t* cpus) {
  std::vector<int> list;
  if (cpus == nullptr) return list;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, cpus)) list.push_back(cpu);
  }
  return list;
}

}  // namespace

std::string zygoteConfigMessage(const std::vector<std::string>& preload, const std::vector<std::string>& workerArgv,
                                const std::vector<std::string>& environment) {
  try {
    return nlohmann::json{{"preload", preload}, {"argv", workerArgv}, {"env", environment}}.dump();
  } catch (const nlohmann::json::type_error&) {
    return {};  // not UTF-8: JSON cannot carry it unchanged
  }
}

std::vector<std::string> attachedDescriptorNames(const ChildSetup& setup) {
  std::vector<std::string> names = {"stdin", "stdout", "stderr"};
  if (setup.guardFd >= 0) names.emplace_back("guard");
  if (setup.cgroupProcsFd >= 0) names.emplace_back("cgroup");
  return names;
}

std::string forkRequestMessage(const ForkRequest& request) {
  nlohmann::json message{{"argv", nullTerminatedList(request.setup.argv)},
                         {"env", nullTerminatedList(request.setup.envp)},
                         {"launcher", request.launcher},
                         {"cpus", cpuList(request.setup.cpus)},
                         {"open_file_limit", request.setup.openFileLimit},
                         {"fds", request.attachedFds}};
  try {
    return message.dump();
  } catch (const nlohmann::json::type_error&) {
    return {};  // not UTF-8: JSON cannot carry it unchanged
  }
}

ZygoteAnswer parseZygoteAnswer(std::string_view message) {
  ZygoteAnswer answer;
  const nlohmann::json parsed = nlohmann::json::parse(message, nullptr, false);
  if (!parsed.is_object()) {
    answer.error = "it answered something that is not its protocol";
    return answer;
  }
  if (parsed.contains("error") && parsed["error"].is_string()) {
    answer.error = parsed["error"].get<std::string>();
  } else if (parsed.value("ready", false)) {
    answer.ready = true;
  } else if (parsed.contains("pid") && parsed["pid"].is_number_integer() && parsed["pid"].get<long long>() > 0) {
    answer.pid = static_cast<pid_t>(parsed["pid"].get<long long>());
  } else {
    answer.error = "it answered something that is not its protocol";
  }
  return answer;
}

}  // namespace pltrun
