#include "rendezvous/store/socket_stream.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pltrun::detail {
namespace {

// Rounded up, so a wait never ends before its deadline.
int millisecondsUntil(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

}  // namespace

SocketStream::~SocketStream() { close(); }

void SocketStream::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool SocketStream::waitFor(short events, Clock::time_point deadline, Status& status) {
  while (true) {
    pollfd ready{fd_, events, 0};
    int result = poll(&ready, 1, millisecondsUntil(deadline));
    if (result > 0) return true;
    if (result == 0) {
      if (Clock::now() < deadline) continue;
      status = Status::Timeout;
      return false;
    }
    if (errno != EINTR) {
      lastError_ = strerror(errno);
      status = Status::Failed;
      return false;
    }
  }
}

std::string SocketStream::tryConnect(const std::string& host, int port, Clock::time_point deadline,
                                     std::chrono::milliseconds unacknowledgedLimit) {
  close();
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int resolved = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (resolved != 0) return std::string("cannot resolve '") + host + "': " + gai_strerror(resolved);
  std::string why = "no address";
  for (addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    int fd = socket(entry->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      why = strerror(errno);
      continue;
    }
    fd_ = fd;
    if (connect(fd, entry->ai_addr, entry->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = strerror(errno);
      close();
      continue;
    }
    Status status = Status::Ok;
    int error = 0;
    socklen_t length = sizeof error;
    if (!waitFor(POLLOUT, deadline, status)) {
      why = status == Status::Timeout ? "connect timed out" : lastError_;
    } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
      why = strerror(error != 0 ? error : errno);
    } else {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      const auto limit = static_cast<unsigned>(std::clamp<long long>(unacknowledgedLimit.count(), 1, 1 << 30));
      setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &limit, sizeof limit);
      freeaddrinfo(found);
      return {};
    }
    close();
  }
  freeaddrinfo(found);
  return why;
}

SocketStream::Status SocketStream::writeAll(const std::string& bytes, Clock::time_point deadline) {
  size_t sent = 0;
  Status status = Status::Ok;
  while (sent < bytes.size()) {
    ssize_t written = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (written > 0) {
      sent += static_cast<size_t>(written);
      continue;
    }
    if (written < 0 && errno == EINTR) continue;
    if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFor(POLLOUT, deadline, status)) return status;
      continue;
    }
    lastError_ = strerror(errno);
    return errno == EPIPE || errno == ECONNRESET ? Status::Closed : Status::Failed;
  }
  return Status::Ok;
}

SocketStream::Status SocketStream::readExact(void* out, size_t size, Clock::time_point deadline) {
  auto* bytes = static_cast<char*>(out);
  size_t got = 0;
  Status status = Status::Ok;
  while (got < size) {
    ssize_t received = recv(fd_, bytes + got, size - got, 0);
    if (received > 0) {
      got += static_cast<size_t>(received);
      continue;
    }
    if (received == 0) return Status::Closed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!waitFor(POLLIN, deadline, status)) return status;
      continue;
    }
    lastError_ = strerror(errno);
    return errno == ECONNRESET ? Status::Closed : Status::Failed;
  }
  return Status::Ok;
}

}  // namespace pltrun::detail
