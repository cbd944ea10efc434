#pragma once
// An endpoint as users type it and as flags read it back: "host:port", an IPv6 address in
// brackets ("[fd00::5]:1234"), the one place that decides how. Header-only: the launcher's
// flags and the etcd client both write endpoints this way.

#include <string>

namespace pltrun {

inline std::string hostPortText(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace pltrun
