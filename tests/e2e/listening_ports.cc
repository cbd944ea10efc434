#include "e2e/listening_ports.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace pltrun::test {

namespace {

// The inodes of `pid`'s sockets: its fds' links read "socket:[INODE]".
std::set<std::string> socketInodes(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code error;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error)) {
    const std::string target = std::filesystem::read_symlink(fd.path(), error).string();
    if (!error && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  return inodes;
}

// Adds the ports of the listening sockets in `table` (/proc/PID/net/tcp's format: "sl
// local_address rem_address st ... uid timeout inode") whose inode is in `inodes`.
void addListening(const std::string& table, const std::set<std::string>& inodes, std::vector<int>& ports) {
  std::ifstream lines(table);
  std::string line;
  std::getline(lines, line);  // the column names
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    constexpr const char* kListen = "0A";
    if (state != kListen || inodes.count(inode) == 0) continue;
    ports.push_back(std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
  }
}

}  // namespace

std::vector<int> listeningPorts(pid_t pid) {
  const std::set<std::string> inodes = socketInodes(pid);
  std::vector<int> ports;
  if (inodes.empty()) return ports;
  for (const char* table : {"/net/tcp", "/net/tcp6"})
    addListening("/proc/" + std::to_string(pid) + table, inodes, ports);
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  return ports;
}

}  // namespace pltrun::test
