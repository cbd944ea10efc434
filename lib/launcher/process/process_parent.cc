#include "launcher/process/process_parent.h"

#include <fstream>
#include <sstream>
#include <string>

namespace pltrun {

std::optional<pid_t> parentOf(pid_t pid) {
  // "pid (comm) state ppid ...": comm may hold spaces and ')', so fields count from the last ')'.
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(file, text)) return std::nullopt;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  char state = '?';
  long long parent = -1;
  fields >> state >> parent;
  if (!fields || parent < 0) return std::nullopt;
  return static_cast<pid_t>(parent);
}

}  // namespace pltrun
