#include "helpers/sshd_fixture.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace pltrun::test {

namespace {

constexpr const char* kSshd = "/usr/sbin/sshd";

// `name` found on PATH, else `fallback`.
std::string findBinary(const std::string& name, const std::string& fallback) {
  const char* path = std::getenv("PATH");
  std::stringstream directories(path ? path : "");
  std::string directory;
  while (std::getline(directories, directory, ':')) {
    if (directory.empty()) continue;
    std::string candidate = directory + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return fallback;
}

std::string sshKeygenBinary() { return findBinary("ssh-keygen", "/usr/bin/ssh-keygen"); }

// A socket address for a numeric host and a port; throws for anything else.
sockaddr_storage socketAddress(const std::string& host, int port, socklen_t* length) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr) {
    throw std::runtime_error("SshServer: listen address is not a numeric IP address: " + host);
  }
  sockaddr_storage address{};
  std::memcpy(&address, found->ai_addr, found->ai_addrlen);
  *length = found->ai_addrlen;
  freeaddrinfo(found);
  return address;
}

// A port that is free on every address now: bound on the first with port 0, then checked on
// the others. sshd may still lose it to someone else before it binds; the caller retries.
int pickPort(const std::vector<std::string>& addresses) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::vector<int> sockets;
    int port = 0;
    bool free = true;
    for (const auto& host : addresses) {
      socklen_t length = 0;
      sockaddr_storage address = socketAddress(host, port, &length);
      int fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) throw std::runtime_error(std::string("SshServer: socket: ") + std::strerror(errno));
      sockets.push_back(fd);
      if (bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
        if (errno != EADDRINUSE) {
          std::string reason = std::strerror(errno);
          for (int open : sockets) close(open);
          throw std::runtime_error("SshServer: cannot listen on " + host + ": " + reason);
        }
        free = false;
        break;
      }
      if (port == 0) {
        length = sizeof address;
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
        port = ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                                                   : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
      }
    }
    for (int fd : sockets) close(fd);
    if (free && port != 0) return port;
  }
  throw std::runtime_error("SshServer: found no port free on every listen address");
}

// True when process `pid` holds a socket listening on host:port: read from /proc (its fds,
// and the kernel's TCP tables), so the check opens no connection to sshd.
bool listensOn(pid_t pid, const std::string& host, int port) {
  std::set<std::string> inodes;
  std::string fdDirectory = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(fdDirectory, error)) {
    std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    if (!error && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  if (inodes.empty()) return false;
  // The kernel prints an address as its 32-bit words, each "%08X" in host byte order.
  socklen_t length = 0;
  sockaddr_storage address = socketAddress(host, port, &length);
  bool six = address.ss_family == AF_INET6;
  const unsigned char* bytes =
      six ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr.s6_addr
          : reinterpret_cast<unsigned char*>(&reinterpret_cast<sockaddr_in*>(&address)->sin_addr);
  std::string local;
  char word[16];
  for (int index = 0; index < (six ? 4 : 1); ++index) {
    uint32_t value = 0;
    std::memcpy(&value, bytes + 4 * index, 4);
    std::snprintf(word, sizeof word, "%08X", value);
    local += word;
  }
  std::snprintf(word, sizeof word, ":%04X", port);
  local += word;
  std::ifstream table(six ? "/proc/net/tcp6" : "/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, localField, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> localField >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (localField == local && state == "0A" && inodes.count(inode)) return true;
  }
  return false;
}

// OpenSSH's version as major * 100 + minor (902 for 9.2p1), from `sshd -V`; 0 if unknown.
int sshdVersion() {
  ChildProcess version({kSshd, "-V"});
  Finished finished = version.wait(std::chrono::seconds(10));
  std::string text = finished.err + finished.out;
  size_t at = text.find("OpenSSH_");
  if (at == std::string::npos) return 0;
  int major = 0, minor = 0;
  if (std::sscanf(text.c_str() + at, "OpenSSH_%d.%d", &major, &minor) != 2) return 0;
  return major * 100 + minor;
}

void writeFile(const std::string& path, const std::string& text, std::filesystem::perms mode) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  file.close();
  if (!file) throw std::runtime_error("SshServer: cannot write " + path);
  std::filesystem::permissions(path, mode);
}

void generateKey(const std::string& path) {
  ChildProcess keygen({sshKeygenBinary(), "-t", "ed25519", "-N", "", "-C", "pltrun-test", "-f", path, "-q"});
  Finished finished = keygen.wait(std::chrono::seconds(30));
  if (finished.status != 0) {
    throw std::runtime_error("SshServer: ssh-keygen for " + path + " failed (status " +
                             std::to_string(finished.status) + "): " + finished.err);
  }
}

std::string currentUser() {
  passwd* entry = getpwuid(getuid());
  if (entry == nullptr) throw std::runtime_error("SshServer: no passwd entry for uid " + std::to_string(getuid()));
  return entry->pw_name;
}

// sshd_config's ListenAddress with the port: "[::1]:P" for IPv6, "127.0.0.1:P" for IPv4.
std::string listenAddressLine(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return "ListenAddress [" + host + "]:" + std::to_string(port) + "\n";
  return "ListenAddress " + host + ":" + std::to_string(port) + "\n";
}

}  // namespace

SshServer::SshServer(const std::vector<std::string>& listenAddresses) {
  std::string why;
  if (!available(&why)) throw std::runtime_error("SshServer: " + why);
  if (listenAddresses.empty()) throw std::runtime_error("SshServer: no listen address");

  // sshd's privilege separation directory: root's, not writable by others.
  std::error_code error;
  std::filesystem::create_directories("/run/sshd", error);
  if (error) throw std::runtime_error("SshServer: cannot create /run/sshd: " + error.message());
  if (chmod("/run/sshd", 0755) != 0)
    throw std::runtime_error(std::string("SshServer: chmod /run/sshd: ") + std::strerror(errno));

  generateKey(dir_ / "host_key");
  generateKey(identity());
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_all);
  writeFile(dir_ / "authorized_keys", readFile(identity() + ".pub"),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  std::string failure;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (start(listenAddresses, &failure)) return;
  }
  throw std::runtime_error("SshServer: sshd could not bind a port after 5 tries: " + failure);
}

bool SshServer::start(const std::vector<std::string>& listenAddresses, std::string* failure) {
  port_ = pickPort(listenAddresses);
  std::string config = dir_ / "sshd_config";
  std::stringstream server;
  server << "Port " << port_ << "\n";
  for (const auto& host : listenAddresses) server << listenAddressLine(host, port_);
  server << "HostKey " << (dir_ / "host_key") << "\n"
         << "PidFile " << (dir_ / "sshd.pid") << "\n"
         << "AuthorizedKeysFile " << (dir_ / "authorized_keys") << "\n"
         << "PermitRootLogin prohibit-password\n"
         << "PubkeyAuthentication yes\n"
         << "PasswordAuthentication no\n"
         << "KbdInteractiveAuthentication no\n"
         << "UsePAM no\n"
         << "StrictModes no\n"
         << "PermitUserEnvironment no\n"
         << "PrintMotd no\n"
         << "LogLevel ERROR\n"
         << "MaxStartups 100\n"
         << "MaxSessions 100\n"
         << "ClientAliveInterval 0\n";
  // OpenSSH 9.8 penalises addresses whose connections fail or crash; tests do that on purpose.
  if (sshdVersion() >= 908) server << "PerSourcePenalties no\n";
  writeFile(config, server.str(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  std::stringstream client;
  client << "Host *\n"
         << "  Port " << port_ << "\n"
         << "  User " << currentUser() << "\n"
         << "  IdentityFile " << identity() << "\n"
         << "  IdentitiesOnly yes\n"
         << "  StrictHostKeyChecking no\n"
         << "  UserKnownHostsFile /dev/null\n"
         << "  GlobalKnownHostsFile /dev/null\n"
         << "  LogLevel ERROR\n"
         << "  BatchMode yes\n"
         << "  ConnectTimeout 10\n";
  writeFile(clientConfig(), client.str(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  // sshd's output goes to a file, not to ChildProcess's pipes: the per-connection processes
  // inherit it and may outlive the listener, and a pipe they hold would keep wait() waiting.
  std::string logPath = dir_ / "sshd.log";
  writeFile(logPath, "", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  sshd_ = std::make_unique<ChildProcess>(std::vector<std::string>{
      "/bin/sh", "-c", std::string("exec ") + kSshd + " -D -e -f \"$1\" >>\"$2\" 2>&1", "sh", config, logPath});

  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    bool bindFailed = log().find("Bind to port") != std::string::npos;
    if (processGone(sshd_->pid()) || bindFailed) {
      sshd_->signal(SIGTERM);
      Finished finished = sshd_->wait(std::chrono::seconds(10));
      std::string text = log();
      sshd_.reset();
      if (bindFailed || text.find("Cannot bind any address") != std::string::npos ||
          text.find("Address already in use") != std::string::npos) {
        *failure = text;
        return false;  // lost the port to someone else: try another
      }
      throw std::runtime_error("SshServer: sshd exited (status " + std::to_string(finished.status) +
                               ") before it listened; its stderr:\n" + text);
    }
    bool ready = true;
    for (const auto& host : listenAddresses) ready = ready && listensOn(sshd_->pid(), host, port_);
    // A bind error logged by now means one address belongs to another program.
    if (ready && log().find("Bind to port") == std::string::npos) return true;
    if (std::chrono::steady_clock::now() > deadline) {
      std::string addresses;
      for (const auto& host : listenAddresses) addresses += " " + host;
      std::string text = log();
      sshd_->signal(SIGTERM);
      sshd_->wait(std::chrono::seconds(10));
      sshd_.reset();
      throw std::runtime_error("SshServer: sshd did not answer on port " + std::to_string(port_) + " of" + addresses +
                               " within 10 s; its stderr:\n" + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

SshServer::~SshServer() {
  if (!sshd_) return;
  sshd_->signal(SIGTERM);
  sshd_->wait(std::chrono::seconds(10));  // SIGKILLs it after that
}

std::vector<std::string> SshServer::sshCommand(const std::string& host) const {
  return {sshBinary(), "-F", clientConfig(), host};
}

pid_t SshServer::pid() const { return sshd_ ? sshd_->pid() : -1; }

std::vector<pid_t> SshServer::sessionPids() const {
  std::vector<pid_t> children;
  if (!sshd_) return children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::string stat = readFile("/proc/" + std::string(entry->d_name) + "/stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long parent = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &parent) == 2 && parent == sshd_->pid() &&
        state != 'Z') {
      children.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(proc);
  return children;
}

std::string SshServer::log() const { return readFile(dir_ / "sshd.log"); }

std::string SshServer::sshBinary() { return findBinary("ssh", "/usr/bin/ssh"); }

bool SshServer::available(std::string* why) {
  std::string reason;
  if (access(kSshd, X_OK) != 0) {
    reason = std::string(kSshd) + " is missing (scripts/install-deps.sh installs openssh-server)";
  } else if (access(sshBinary().c_str(), X_OK) != 0) {
    reason = "ssh is missing (scripts/install-deps.sh installs openssh-client)";
  } else if (access(sshKeygenBinary().c_str(), X_OK) != 0) {
    reason = "ssh-keygen is missing (scripts/install-deps.sh installs openssh-client)";
  } else if (geteuid() != 0) {
    reason = "sshd for tests needs root (it logs in as the current user and needs /run/sshd)";
  }
  if (why != nullptr) *why = reason;
  return reason.empty();
}

}  // namespace pltrun::test
