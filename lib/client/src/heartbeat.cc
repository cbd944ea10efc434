#include "pltrun/heartbeat.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace pltrun {
namespace {

// The process's sending socket and the pid that opened it, in one word so that one atomic
// load reads both: a child made by fork() inherits the word, sees another pid and opens a
// socket of its own. It never uses the inherited descriptor, which the child may have
// closed and reused for a file or a TCP connection that a heartbeat would then write into.
// No lock: a fork() while another thread held one would leave it held in the child.
std::atomic<std::uint64_t> sender{0};

std::uint64_t packed(pid_t pid, int fd) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pid)) << 32) | static_cast<std::uint32_t>(fd);
}

// This process's socket, opened on its first heartbeat; -1 when none can be opened. The
// socket is neither bound nor connected (sendto names the path each time), so one socket
// serves whatever PLTRUN_HEARTBEAT says. Non-blocking as well as MSG_DONTWAIT, so that no
// path through the kernel can wait.
int senderSocket() {
  const pid_t pid = getpid();
  std::uint64_t current = sender.load(std::memory_order_acquire);
  if (current != 0 && static_cast<pid_t>(current >> 32) == pid) return static_cast<int>(current & 0xffffffffu);
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  // Two threads' first heartbeats may race: one socket wins, the other is closed.
  while (!sender.compare_exchange_weak(current, packed(pid, fd), std::memory_order_acq_rel)) {
    if (current != 0 && static_cast<pid_t>(current >> 32) == pid) {
      close(fd);
      return static_cast<int>(current & 0xffffffffu);
    }
  }
  return fd;
}

}  // namespace

void heartbeat(long long step) noexcept {
  // Read on every call (a getenv, well under the send's cost): no socket is opened outside
  // pltrun, and a program may switch heartbeats off for its children by unsetting it.
  const char* path = std::getenv("PLTRUN_HEARTBEAT");
  if (path == nullptr || path[0] == '\0') return;
  sockaddr_un address;
  address.sun_family = AF_UNIX;
  const size_t length = std::strlen(path);
  if (length >= sizeof address.sun_path) return;  // pltrun never makes such a path
  std::memcpy(address.sun_path, path, length + 1);

  char payload[24];
  size_t size = 4;
  if (step < 0) {
    std::memcpy(payload, "beat", size);  // a heartbeat without a progress counter
  } else {
    size = static_cast<size_t>(std::to_chars(payload, payload + sizeof payload, step).ptr - payload);
  }
  const int fd = senderSocket();
  if (fd < 0) return;
  // Every error is ignored: EAGAIN (pltrun's queue is full: it is busy, and this beat is
  // not needed, the next one says the same), ECONNREFUSED or ENOENT (pltrun is gone).
  // A heartbeat must never turn a slow or vanished launcher into a stalled worker.
  (void)sendto(fd, payload, size, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&address),
               static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length + 1));
}

}  // namespace pltrun
