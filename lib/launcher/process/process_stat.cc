#include "launcher/process/process_stat.h"

#include <fstream>
#include <sstream>
#include <string>

namespace pltrun {

// "pid (comm) state ppid pgrp ... starttime(22nd)": comm may hold spaces and ')', so the
// fields count from the last ')'.
std::optional<ProcessStat> readProcessStat(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(file, text)) return std::nullopt;
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 > text.size()) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  ProcessStat stat;
  long long parent = -1, group = 0;
  fields >> stat.state >> parent >> group;
  std::string skipped;
  for (int field = 6; field < 22 && fields >> skipped; ++field) {
  }
  fields >> stat.startTime;
  if (!fields || parent < 0) return std::nullopt;
  stat.parent = static_cast<pid_t>(parent);
  stat.group = static_cast<pid_t>(group);
  return stat;
}

std::optional<pid_t> parentOf(pid_t pid) {
  const std::optional<ProcessStat> stat = readProcessStat(pid);
  if (!stat) return std::nullopt;
  return stat->parent;
}

}  // namespace pltrun
