#include "launcher/placement/lock_holder.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/file_control.h"
#include "base/terminal_text.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {
namespace {

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> found;
  for (std::string_view word : splitText(line, ' ')) {
    if (!word.empty()) found.push_back(word);
  }
  return found;
}

// The first line of /proc/PID/comm: the command name the process gave itself.
std::string commandName(long long pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

}  // namespace

std::optional<long long> flockHolderIn(std::string_view procLocks, unsigned major, unsigned minor,
                                       unsigned long long inode) {
  char file[64];
  std::snprintf(file, sizeof file, "%02x:%02x:%llu", major, minor, inode);
  // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's line has "->" after "1:".
  for (std::string_view line : splitText(procLocks, '\n')) {
    const std::vector<std::string_view> fields = words(line);
    if (fields.size() < 6 || fields[1] != "FLOCK") continue;  // a waiter's "->", or a POSIX lock
    if (fields[5] != file) continue;
    if (auto pid = parseInteger(fields[4])) return *pid;
  }
  return std::nullopt;
}

std::string userNameText(uid_t uid) {
  const std::optional<std::string> name = userName(uid);
  return name ? terminalSafe(*name) : "uid " + std::to_string(uid);
}

std::optional<long long> flockHolderPid(int fd) {
  struct stat file {};
  if (fstat(fd, &file) != 0) return std::nullopt;
  std::ifstream locks("/proc/locks");
  std::ostringstream text;
  text << locks.rdbuf();
  const auto pid = flockHolderIn(text.str(), major(file.st_dev), minor(file.st_dev), file.st_ino);
  if (!pid || *pid <= 0) return std::nullopt;  // 0: a pid of another namespace
  return pid;
}

std::optional<uid_t> processOwner(long long pid) {
  struct stat process {};
  if (stat(("/proc/" + std::to_string(pid)).c_str(), &process) != 0) return std::nullopt;
  return process.st_uid;
}

std::string flockHolderText(int fd) {
  const auto pid = flockHolderPid(fd);
  if (!pid) return "a process pltrun cannot see";
  const std::string name = terminalSafe(commandName(*pid));
  const std::string who = "pid " + std::to_string(*pid) + " (" + (name.empty() ? "" : name + ", ");
  const auto owner = processOwner(*pid);
  return who + (owner ? "user " + userNameText(*owner) : std::string("gone now")) + ")";
}

}  // namespace pltrun
