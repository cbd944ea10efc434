#include "launcher/process/cgroup_paths.h"

#include <sstream>
#include <vector>

namespace pltrun {
namespace {

std::vector<std::string> spaceSeparated(const std::string& line) {
  std::istringstream stream(line);
  std::vector<std::string> fields;
  for (std::string field; stream >> field;) fields.push_back(field);
  return fields;
}

// mountinfo writes a space, tab, newline or backslash in a path as \ooo (octal).
std::string unescapeMountPath(const std::string& text) {
  std::string path;
  for (size_t index = 0; index < text.size(); ++index) {
    if (text[index] == '\\' && index + 3 < text.size()) {
      const std::string octal = text.substr(index + 1, 3);
      if (octal.find_first_not_of("01234567") == std::string::npos) {
        path += static_cast<char>(std::stoi(octal, nullptr, 8));
        index += 3;
        continue;
      }
    }
    path += text[index];
  }
  return path;
}

}  // namespace

std::optional<Cgroup2Mount> findCgroup2Mount(const std::string& mountinfo) {
  // "36 25 0:31 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw": after the optional
  // fields, a "-", then the file system type.
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> fields = spaceSeparated(line);
    size_t separator = 6;
    while (separator < fields.size() && fields[separator] != "-") ++separator;
    if (separator + 1 >= fields.size() || fields[separator + 1] != "cgroup2") continue;
    return Cgroup2Mount{unescapeMountPath(fields[4]), unescapeMountPath(fields[3])};
  }
  return std::nullopt;
}

std::optional<std::string> unifiedCgroupPath(const std::string& procSelfCgroup) {
  std::istringstream lines(procSelfCgroup);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::", 0) == 0 && line.size() > 3 && line[3] == '/') return line.substr(3);
  }
  return std::nullopt;
}

std::optional<std::string> cgroupDirectory(const Cgroup2Mount& mount, const std::string& path) {
  std::string relative = path;
  if (mount.root != "/") {
    // A mount of a subtree (a container's): the path must lie under its root.
    if (path != mount.root && path.rfind(mount.root + "/", 0) != 0) return std::nullopt;
    relative = path.substr(mount.root.size());
  }
  if (relative.empty() || relative == "/") return mount.mountPoint;
  return mount.mountPoint + relative;
}

}  // namespace pltrun
