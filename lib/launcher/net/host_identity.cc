#include "launcher/net/host_identity.h"

#include <unistd.h>

#include <cstdio>
#include <random>

namespace pltrun {

std::string localHostName() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::string randomHexId() {
  std::random_device device;
  char text[16];
  snprintf(text, sizeof text, "%08x", device());
  return text;
}

std::string newAgentId(const std::string& host) { return host + ":" + std::to_string(getpid()) + ":" + randomHexId(); }

}  // namespace pltrun
