#include "launcher/process/heartbeat_socket.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cstring>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// Datagrams read per wake-up: a worker beating at 1 kHz is one or two; a flood yields to
// the rest of the event loop after this many.
constexpr int kBatch = 64;
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

// One datagram: its payload (cut at kPayloadLimit), or none when nothing is queued; a
// datagram from another user is read and dropped.
enum class Received { Beat, Foreign, Empty };

Received receiveOne(int fd, std::string& payload) {
  char data[kPayloadLimit];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
  iovec vector{data, sizeof data};
  msghdr message{};
  message.msg_iov = &vector;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  const ssize_t received = recvmsg(fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (received < 0) return Received::Empty;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_CREDENTIALS) {
      ucred credentials;
      std::memcpy(&credentials, CMSG_DATA(header), sizeof credentials);
      if (credentials.uid != geteuid() && credentials.uid != 0) return Received::Foreign;
    }
  }
  payload.assign(data, static_cast<size_t>(received));
  return Received::Beat;
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

HeartbeatSocket::HeartbeatSocket(boost::asio::io_context& context, std::string path)
    : path_(std::move(path)), socket_(context, boundSocket(path_)) {}

HeartbeatSocket::~HeartbeatSocket() {
  boost::system::error_code ignored;
  socket_.close(ignored);
  unlink(path_.c_str());
}

void HeartbeatSocket::start(OnBeat onBeat) {
  onBeat_ = std::move(onBeat);
  waitForDatagrams();
}

void HeartbeatSocket::waitForDatagrams() {
  socket_.async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code error) {
    if (error) return;  // closed
    readDatagrams();
  });
}

void HeartbeatSocket::readDatagrams() {
  std::string payload;
  for (int count = 0; count < kBatch; ++count) {
    const Received received = receiveOne(socket_.native_handle(), payload);
    if (received == Received::Empty) {
      waitForDatagrams();
      return;
    }
    if (received == Received::Beat) onBeat_(heartbeatCounter(payload));
  }
  // More may be queued: read on after whatever else the loop has to do.
  boost::asio::post(socket_.get_executor(), [this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.lock()) readDatagrams();
  });
}

}  // namespace pltrun
