#pragma once
// One line for a process that ran out of file descriptors, whichever descriptor it failed
// to get first (an epoll instance, a pipe, a socket, a listener): what failed, the limit,
// and what to do. Without it the same cause read as "internal error: epoll: Too many open
// files", or came with a hint about etcd's quorum.

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace pltrun {

/// Whether an error's text says a descriptor could not be had (EMFILE or ENFILE, as
/// strerror and Boost.System word them).
inline bool saysOutOfDescriptors(const std::string& message) {
  return message.find(std::strerror(EMFILE)) != std::string::npos ||
         message.find(std::strerror(ENFILE)) != std::string::npos;
}

/// What to do, for a message that saysOutOfDescriptors.
inline std::string descriptorAdvice() {
  rlimit limit{};
  const std::string count = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                                ? std::to_string(limit.rlim_cur)
                                : std::string("?");
  return "this process is out of file descriptors (its open-file limit is " + count +
         "): raise the limit (ulimit -n; LimitNOFILE= for a systemd service) and start again";
}

/// `message`, followed by what to do when it is about running out of descriptors and does
/// not say so already (a message naming `ulimit -n` has its own advice).
inline std::string withDescriptorAdvice(const std::string& message) {
  if (!saysOutOfDescriptors(message) || message.find("ulimit -n") != std::string::npos) return message;
  return message + ": " + descriptorAdvice();
}

}  // namespace pltrun
