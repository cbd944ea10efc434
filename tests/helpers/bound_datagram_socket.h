#pragma once
// A Unix datagram socket bound in a fresh temporary directory, as pltrun binds a worker's
// heartbeat socket; the socket, its path and the directory go with it. For the client's
// heartbeat test and the heartbeat benchmark, which both play pltrun's part.

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace pltrun::test {

class BoundDatagramSocket {
 public:
  /// In /tmp/STEM-XXXXXX; `typeFlags` adds to SOCK_DGRAM | SOCK_CLOEXEC (SOCK_NONBLOCK).
  /// Throws std::runtime_error naming the step that failed and why.
  explicit BoundDatagramSocket(const std::string& stem, int typeFlags = 0) {
    std::string pattern = "/tmp/" + stem + "-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) fail("mkdtemp " + pattern);
    directory_ = pattern;
    path_ = directory_ + "/beat.sock";
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | typeFlags, 0);
    if (fd_ < 0) fail("socket");
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, path_.c_str());
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) fail("bind " + path_);
  }
  ~BoundDatagramSocket() { removeAll(); }
  BoundDatagramSocket(const BoundDatagramSocket&) = delete;
  BoundDatagramSocket& operator=(const BoundDatagramSocket&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  void removeAll() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    if (!path_.empty()) unlink(path_.c_str());
    if (!directory_.empty()) rmdir(directory_.c_str());
  }
  [[noreturn]] void fail(const std::string& what) {
    const std::string why = what + ": " + std::strerror(errno);
    removeAll();  // a throwing constructor runs no destructor: what was made so far goes here
    throw std::runtime_error(why);
  }

  std::string directory_, path_;
  int fd_ = -1;
};

}  // namespace pltrun::test
