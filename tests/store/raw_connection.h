#pragma once
// A raw loopback connection to a store, for sending bytes no well-behaved client would:
// malformed frames, requests cut short, replies never read, resets.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <string>

namespace pltrun::test {

class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    timeval timeout{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  }
  ~RawConnection() {
    if (fd_ >= 0) close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  /// Sends all of `bytes`; false once the server has closed the connection (or 5 s pass
  /// with the server reading nothing).
  bool send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  /// Exactly `size` reply bytes; fewer when the server closes first (or 5 s pass).
  std::string receive(size_t size) {
    std::string bytes(size, '\0');
    size_t got = 0;
    while (got < size) {
      ssize_t n = recv(fd_, bytes.data() + got, size - got, 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    bytes.resize(got);
    return bytes;
  }
  /// True when the server closed the connection within 5 s; replies that come first are
  /// read and dropped.
  bool closedByServer() {
    char buffer[65536];
    for (;;) {
      ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;
    }
  }
  int fd() const { return fd_; }
  /// Closes with a reset, as a killed process's socket would.
  void abort() {
    linger hard{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace pltrun::test
