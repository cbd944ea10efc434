#include "launcher/plan/slurm_signals.h"

#include <sstream>

#include "launcher/plan/text_parsing.h"

namespace pltrun {

bool includesOtherFiles(const std::string& slurmConf) {
  std::istringstream lines(slurmConf);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string word = lowercase(trimSpaces(line.substr(0, line.find('#'))));
    if (word.rfind("include", 0) == 0) return true;
  }
  return false;
}

std::optional<std::string> proctrackTypeIn(const std::string& slurmConf) {
  std::optional<std::string> found;
  std::istringstream lines(slurmConf);
  std::string line;
  while (std::getline(lines, line)) {
    line = line.substr(0, line.find('#'));
    const size_t equals = line.find('=');
    if (equals == std::string::npos) continue;
    if (lowercase(trimSpaces(line.substr(0, equals))) != "proctracktype") continue;
    found = std::string(trimSpaces(line.substr(equals + 1)));  // the last one counts, as in Slurm
  }
  return found;
}

SlurmSignalReach signalReachOf(const std::optional<std::string>& proctrackType) {
  const std::string type = lowercase(proctrackType.value_or("proctrack/cgroup"));
  if (type == "proctrack/cgroup") return SlurmSignalReach::TaskCgroups;
  if (type == "proctrack/linuxproc" || type == "proctrack/cray_aries") return SlurmSignalReach::Descendants;
  return SlurmSignalReach::TaskGroup;
}

bool slurmSignalsReachWorkers(SlurmSignalReach reach, bool workersInJobCgroup) {
  switch (reach) {
    case SlurmSignalReach::Descendants:
      return true;
    case SlurmSignalReach::TaskCgroups:
      return !workersInJobCgroup;
    case SlurmSignalReach::TaskGroup:
      break;
  }
  return false;
}

SlurmSignalReach readSlurmSignalReach(const Environment& env, const FileReader& readFile) {
  auto configured = env.find("SLURM_CONF");
  const std::string path =
      configured != env.end() && !configured->second.empty() ? configured->second : "/etc/slurm/slurm.conf";
  try {
    const std::string text = readFile(path);
    std::optional<std::string> type = proctrackTypeIn(text);
    // Not set here but maybe in an included file: not known, so forwarded.
    if (!type && includesOtherFiles(text)) return SlurmSignalReach::TaskGroup;
    return signalReachOf(type);
  } catch (const FileReadError&) {
    return SlurmSignalReach::TaskGroup;
  }
}

}  // namespace pltrun
