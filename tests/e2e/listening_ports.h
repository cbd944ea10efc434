#pragma once
// The TCP ports a process listens on, read from /proc (its fds' socket inodes matched with
// /proc/PID/net/tcp and tcp6): how a test finds the port a server it started on port 0 took,
// when the server does not print it (Prometheus logs the address it was given, ":0").

#include <sys/types.h>

#include <vector>

namespace pltrun::test {

/// The ports of `pid`'s listening TCP sockets (IPv4 and IPv6), ascending; empty when it has
/// none (yet) or is gone.
std::vector<int> listeningPorts(pid_t pid);

}  // namespace pltrun::test
