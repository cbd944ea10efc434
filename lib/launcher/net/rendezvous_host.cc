#include "launcher/net/rendezvous_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "launcher/net/host_identity.h"
#include "pltrun/error.h"

namespace pltrun {

HostedStore::HostedStore(rdzv::StoreServerOptions options) {
  rdzv::raiseOpenFileLimit();
  server_ = std::make_unique<rdzv::StoreServer>(context_, std::move(options));
  port_ = server_->port();
  server_->start();
  thread_ = std::thread([this] { context_.run(); });
}

HostedStore::~HostedStore() {
  boost::asio::post(context_, [this] { server_->stop(); });
  context_.stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

namespace {

struct InterfaceAddress {
  std::string interface;
  int family = AF_UNSPEC;
  std::string address;
};

// Every address of this machine's interfaces, as text.
std::vector<InterfaceAddress> interfaceAddresses() {
  std::vector<InterfaceAddress> addresses;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return addresses;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const int family = entry->ifa_addr->sa_family;
    if (family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(entry->ifa_addr)->sin_addr, text, sizeof text);
    } else if (family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(entry->ifa_addr)->sin6_addr, text, sizeof text);
    } else {
      continue;
    }
    addresses.push_back(InterfaceAddress{entry->ifa_name, family, text});
  }
  freeifaddrs(list);
  return addresses;
}

bool isOurAddress(const std::string& address) {
  if (isLoopbackAddress(address)) return true;
  for (const InterfaceAddress& local : interfaceAddresses()) {
    if (local.address == address) return true;
  }
  return false;
}

std::vector<std::string> resolve(const std::string& host) {
  std::vector<std::string> addresses;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return addresses;
  for (addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = entry->ai_family == AF_INET
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(entry->ai_addr)->sin_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(entry->ai_addr)->sin6_addr);
    if (inet_ntop(entry->ai_family, raw, text, sizeof text) != nullptr) addresses.emplace_back(text);
  }
  freeaddrinfo(found);
  return addresses;
}

bool isLiteralAddress(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

}  // namespace

bool isLoopbackAddress(const std::string& address) {
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return address == "::1";
}

std::string interfaceAddress(const std::string& name) {
  std::string v6;
  for (const InterfaceAddress& local : interfaceAddresses()) {
    if (local.interface != name) continue;
    if (local.family == AF_INET) return local.address;
    if (v6.empty()) v6 = local.address;
  }
  return v6;
}

bool isLocalHost(const std::string& host) {
  if (host == "localhost") return true;
  if (isLiteralAddress(host)) return isOurAddress(host);
  if (host == localHostName()) return true;
  for (const std::string& address : resolve(host)) {
    if (isOurAddress(address)) return true;
  }
  return false;
}

std::string listenAddressFor(const std::string& host) {
  if (isLiteralAddress(host)) return host;
  if (host == "localhost") return "127.0.0.1";
  return "0.0.0.0";
}

std::string nodeListenAddress(const std::string& addr) {
  return isLocalHost(addr) ? listenAddressFor(addr) : "0.0.0.0";
}

std::string localAddressTowards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port == 0 ? 9 : port).c_str(), &hints, &found) != 0) return "";
  std::string local;
  for (addrinfo* entry = found; entry != nullptr && local.empty(); entry = entry->ai_next) {
    // A connected UDP socket: the kernel picks the route and source address; nothing is sent.
    int fd = socket(entry->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    if (connect(fd, entry->ai_addr, entry->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* raw = bound.ss_family == AF_INET
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&bound)->sin_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&bound)->sin6_addr);
      if (inet_ntop(bound.ss_family, raw, text, sizeof text) != nullptr) local = text;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return local;
}

std::unique_ptr<HostedStore> hostRendezvousStoreIfOurs(const RendezvousSettings& settings, const std::string& secret,
                                                       const std::string& runId) {
  const bool ours = settings.isHost.value_or(isLocalHost(settings.endpointHost));
  if (!ours) return nullptr;
  rdzv::StoreServerOptions options;
  options.host = listenAddressFor(settings.endpointHost);
  options.port = settings.endpointPort;
  options.secret = secret;
  options.context = runId;
  rdzv::raiseOpenFileLimit();
  options.descriptorBudget = rdzv::openFileLimitShare(1, 2);
  try {
    return std::make_unique<HostedStore>(options);
  } catch (const rdzv::AddressInUse&) {
    if (settings.isHost.value_or(false)) {
      throw Error(ErrorCode::Network, "is_host=1 but " + settings.endpointHost + ":" +
                                          std::to_string(settings.endpointPort) +
                                          " is taken; choose a free port for --rdzv-endpoint");
    }
    // Another agent on this machine hosts it already: connect like everyone else. With a
    // secret, the handshake then proves that the process on the port is this job's store
    // (a squatter is refused); without one, nothing can.
    return nullptr;
  }
}

}  // namespace pltrun
