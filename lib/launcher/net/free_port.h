#pragma once
// A TCP port that nobody is listening on, found by binding port 0 and reading back what
// the kernel chose. torchrun's fixed default 29500 collides whenever two jobs share a
// node; this does not.

#include <string>

namespace pltrun {

/// A free port on `address` (an IPv4 or IPv6 literal or a host name this machine owns);
/// falls back to the wildcard address when `address` is not local. Throws Error(Network).
int pickFreePort(const std::string& address);

}  // namespace pltrun
