#include "launcher/net/free_port.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pltrun/error.h"

namespace pltrun {
namespace {

int boundPort(const sockaddr* address, socklen_t length, int family) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int port = -1;
  sockaddr_storage bound{};
  socklen_t boundLength = sizeof bound;
  if (bind(fd, address, length) == 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &boundLength) == 0) {
    port = family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                              : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  close(fd);
  return port;
}

}  // namespace

int pickFreePort(const std::string& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), "0", &hints, &found) == 0) {
    for (addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
      int port = boundPort(entry->ai_addr, entry->ai_addrlen, entry->ai_family);
      if (port > 0) {
        freeaddrinfo(found);
        return port;
      }
    }
    freeaddrinfo(found);
  }
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = 0;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  int port = boundPort(reinterpret_cast<sockaddr*>(&any), sizeof any, AF_INET);
  if (port <= 0) {
    throw Error(ErrorCode::Network,
                "cannot find a free TCP port for " + address + ": " + strerror(errno) + "; pass --master-port");
  }
  return port;
}

}  // namespace pltrun
