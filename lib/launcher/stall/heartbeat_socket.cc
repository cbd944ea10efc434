#include "launcher/stall/heartbeat_socket.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// Datagrams taken by one recvmmsg call; the kernel queues about 10 per socket by default
// (net.unix.max_dgram_qlen), so one call usually empties it.
constexpr unsigned kBatch = 16;
constexpr size_t kPayloadLimit = 32;

int boundSocket(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    throw Error(ErrorCode::System, "heartbeat socket path too long (" + std::to_string(path.size()) +
                                       " bytes; set TMPDIR to a shorter directory): " + path);
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int error = errno;
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    const std::string hint = error == EMFILE || error == ENFILE
                                 ? "; each worker needs about 5 descriptors (its pipes and heartbeat socket) and the "
                                   "open-file limit is " +
                                       std::to_string(limit.rlim_cur) + ": raise it (ulimit -n) or start fewer workers"
                                 : "";
    throw Error(ErrorCode::System, std::string("cannot make a heartbeat socket: ") + std::strerror(error) + hint);
  }
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int error = errno;
    close(fd);
    throw Error(ErrorCode::System, "cannot bind the heartbeat socket " + path + ": " + std::strerror(error));
  }
  return fd;
}

// Root and `owner` may beat; anyone else's datagram (the directory's mode should keep them
// out) is dropped.
bool fromOwner(const msghdr& message, uid_t owner) {
  for (const cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(const_cast<msghdr*>(&message), const_cast<cmsghdr*>(header))) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_CREDENTIALS) {
      ucred credentials;
      std::memcpy(&credentials, CMSG_DATA(header), sizeof credentials);
      return credentials.uid == owner || credentials.uid == 0;
    }
  }
  return true;
}

// One recvmmsg call's worth of datagrams; a datagram from another user counts as read but
// is no heartbeat. Reads at most `count` (up to kBatch); returns how many it read.
int receiveBatch(int fd, uid_t owner, unsigned count, DrainedHeartbeats& found) {
  struct Slot {
    char data[kPayloadLimit];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec vector;
  };
  Slot slots[kBatch];
  mmsghdr messages[kBatch]{};
  for (unsigned i = 0; i < count; ++i) {
    slots[i].vector = {slots[i].data, sizeof slots[i].data};
    messages[i].msg_hdr.msg_iov = &slots[i].vector;
    messages[i].msg_hdr.msg_iovlen = 1;
    messages[i].msg_hdr.msg_control = slots[i].control;
    messages[i].msg_hdr.msg_controllen = sizeof slots[i].control;
  }
  const int received = recvmmsg(fd, messages, count, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, nullptr);
  for (int i = 0; i < received; ++i) {
    if (!fromOwner(messages[i].msg_hdr, owner)) continue;
    found.beat = true;
    const std::string_view payload(slots[i].data, messages[i].msg_len);
    if (auto counter = heartbeatCounter(payload)) found.counter = counter;
  }
  return std::max(received, 0);
}

}  // namespace

std::optional<long long> heartbeatCounter(std::string_view payload) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t first = payload.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return std::nullopt;
  const std::string_view text = payload.substr(first, payload.find_last_not_of(kSpace) - first + 1);
  // No sign, and at most 18 digits (any such number fits in a long long).
  if (text.size() > 18 || text.front() == '-') return std::nullopt;
  return parseInteger(text);
}

HeartbeatSocket::HeartbeatSocket(std::string path)
    : path_(std::move(path)), fd_(boundSocket(path_)), owner_(geteuid()) {}

HeartbeatSocket::~HeartbeatSocket() {
  close(fd_);
  unlink(path_.c_str());
}

DrainedHeartbeats HeartbeatSocket::drain(int limit) {
  DrainedHeartbeats found;
  while (found.datagrams < limit) {
    const unsigned asked = std::min(static_cast<unsigned>(limit - found.datagrams), kBatch);
    const int read = receiveBatch(fd_, owner_, asked, found);
    found.datagrams += read;
    if (static_cast<unsigned>(read) < asked) break;  // the queue is empty
  }
  return found;
}

}  // namespace pltrun
