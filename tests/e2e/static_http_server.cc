#include "e2e/static_http_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pltrun::test {

StaticHttpServer::StaticHttpServer(std::string body) : body_(std::move(body)), thread_([this] { serve(); }) {}

StaticHttpServer::~StaticHttpServer() {
  stopping_ = true;
  thread_.join();
}

void StaticHttpServer::serve() {
  while (!stopping_) {
    pollfd entry{listener_.fd(), POLLIN, 0};
    if (poll(&entry, 1, 100) <= 0) continue;  // 100 ms: how soon the destructor is heard
    const int connection = accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    answer(connection);
    close(connection);
  }
}

// Reads the request's head (up to 2 s, 64 KiB), whatever it asks, and answers the body.
void StaticHttpServer::answer(int connection) const {
  std::string request;
  char buffer[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
    pollfd entry{connection, POLLIN, 0};
    if (poll(&entry, 1, 2000) <= 0) return;
    const ssize_t got = recv(connection, buffer, sizeof buffer, 0);
    if (got <= 0) return;
    request.append(buffer, static_cast<size_t>(got));
  }
  const std::string reply =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " + std::to_string(body_.size()) +
      "\r\nConnection: close\r\n\r\n" + body_;
  (void)!send(connection, reply.data(), reply.size(), MSG_NOSIGNAL);
}

}  // namespace pltrun::test
