#include "e2e/loopback_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <stdexcept>

namespace pltrun::test {

namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds left before `deadline`, at least 0.
int millisecondsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits for `events` on `fd` until `deadline`; false when it passed first.
bool ready(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd entry{fd, events, 0};
    const int got = poll(&entry, 1, millisecondsLeft(deadline));
    if (got > 0) return true;
    if (got == 0 || errno != EINTR) return false;
  }
}

int connectLoopback(int port, Clock::time_point deadline) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0) throw std::runtime_error("socket failed");
  int error = 0;
  socklen_t length = sizeof error;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 &&
      (errno != EINPROGRESS || !ready(fd, POLLOUT, deadline) ||
       getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0)) {
    close(fd);
    throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
  }
  return fd;
}

// Sends `request` and reads until the server closes; throws when `deadline` passes first.
std::string exchange(int fd, const std::string& request, Clock::time_point deadline) {
  for (size_t sent = 0; sent < request.size();) {
    if (!ready(fd, POLLOUT, deadline)) throw std::runtime_error("timed out sending");
    const ssize_t wrote = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (wrote < 0 && errno != EAGAIN && errno != EINTR) throw std::runtime_error("send failed");
    if (wrote > 0) sent += static_cast<size_t>(wrote);
  }
  std::string answer;
  char buffer[65536];
  while (true) {
    if (!ready(fd, POLLIN, deadline)) throw std::runtime_error("timed out reading the answer");
    const ssize_t got = recv(fd, buffer, sizeof buffer, 0);
    if (got == 0) return answer;
    if (got > 0) answer.append(buffer, static_cast<size_t>(got));
    if (got < 0 && errno != EAGAIN && errno != EINTR) throw std::runtime_error("recv failed");
  }
}

}  // namespace

HttpAnswer httpGet(int port, const std::string& target, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string where = "GET 127.0.0.1:" + std::to_string(port) + target + ": ";
  const int fd = connectLoopback(port, deadline);
  std::string raw;
  try {
    raw = exchange(fd, "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n", deadline);
  } catch (const std::exception& error) {
    close(fd);
    throw std::runtime_error(where + error.what());
  }
  close(fd);
  const size_t headEnd = raw.find("\r\n\r\n");
  HttpAnswer answer;
  if (headEnd == std::string::npos || std::sscanf(raw.c_str(), "HTTP/1.%*d %d", &answer.status) != 1) {
    throw std::runtime_error(where + "not an HTTP answer: " + raw.substr(0, 200));
  }
  answer.head = raw.substr(0, headEnd);
  answer.body = raw.substr(headEnd + 4);
  return answer;
}

std::string urlEncoded(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string encoded;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      encoded += static_cast<char>(c);
    } else {
      encoded += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return encoded;
}

}  // namespace pltrun::test
