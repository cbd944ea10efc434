#include "launcher/stall/heartbeat_reader.h"

#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "pltrun/error.h"

namespace pltrun {
namespace {

// Datagrams taken from one socket per read: a flood yields to the rest of the event loop
// after this many.
constexpr int kReadLimit = 64;
// Linux's default for net.unix.max_dgram_qlen.
constexpr int kDefaultQueueLimit = 10;

int newReadinessSet() {
  const int fd = epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0)
    throw Error(ErrorCode::System, std::string("cannot watch heartbeat sockets (epoll): ") + std::strerror(errno));
  return fd;
}

}  // namespace

std::chrono::milliseconds nextReadWindow(std::chrono::milliseconds window, int fullest, int queueLimit) {
  if (fullest * 2 > queueLimit) return std::max(window / 2, kShortestReadWindow);
  if (fullest * 4 <= queueLimit) return std::min(window * 2, kLongestReadWindow);
  return window;
}

int unixDatagramQueueLimit() {
  std::ifstream file("/proc/sys/net/unix/max_dgram_qlen");
  int limit = 0;
  return file >> limit && limit > 0 ? limit : kDefaultQueueLimit;
}

HeartbeatReader::HeartbeatReader(boost::asio::io_context& context, std::unique_ptr<Timer> windowTimer, size_t sockets)
    : windowTimer_(std::move(windowTimer)), readiness_(context), slots_(sockets) {}

HeartbeatReader::~HeartbeatReader() { windowTimer_->cancel(); }

void HeartbeatReader::bind(size_t index, const std::string& path) {
  if (!readiness_.is_open()) {
    // Made with the first socket: a run whose workers get none (a plain single-node run)
    // pays nothing for heartbeats at launch.
    readiness_.assign(newReadinessSet());
    queueLimit_ = unixDatagramQueueLimit();
  }
  auto socket = std::make_unique<HeartbeatSocket>(path);
  epoll_event event{};
  event.data.u64 = index;  // not yet armed: start() does that
  if (epoll_ctl(readiness_.native_handle(), EPOLL_CTL_ADD, socket->descriptor(), &event) != 0) {
    throw Error(ErrorCode::System, "cannot watch the heartbeat socket " + path + ": " + std::strerror(errno));
  }
  slots_.at(index).socket = std::move(socket);
}

void HeartbeatReader::start(OnBeat onBeat) {
  onBeat_ = std::move(onBeat);
  if (!readiness_.is_open()) return;  // no socket was bound
  for (size_t index = 0; index < slots_.size(); ++index) {
    if (slots_[index].socket) watch(index);
  }
  waitForReadiness();
}

void HeartbeatReader::readAll() {
  if (!onBeat_) return;
  for (size_t index = 0; index < slots_.size(); ++index) {
    if (slots_[index].socket) read(index);
  }
}

// Arms the socket for one wake-up. The set is level-triggered: a datagram queued already
// makes it ready at once, so none is missed between a read that found it empty and this.
void HeartbeatReader::watch(size_t index) {
  epoll_event event{};
  event.events = EPOLLIN | EPOLLONESHOT;
  event.data.u64 = index;
  epoll_ctl(readiness_.native_handle(), EPOLL_CTL_MOD, slots_[index].socket->descriptor(), &event);
}

void HeartbeatReader::waitForReadiness() {
  if (!waitingForReadiness_) {
    waitingForReadiness_ = true;
    readiness_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                          [this, alive = std::weak_ptr<bool>(alive_)](boost::system::error_code error) {
                            if (error || !alive.lock()) return;
                            waitingForReadiness_ = false;
                            takeReadySockets();
                          });
  }
  // The event loop wakes only for a socket that turns ready while its wait is pending: one
  // that did so just before is taken on the loop's next turn.
  pollfd ready{readiness_.native_handle(), POLLIN, 0};
  if (poll(&ready, 1, 0) == 1) {
    boost::asio::post(readiness_.get_executor(), [this, alive = std::weak_ptr<bool>(alive_)] {
      if (alive.lock()) takeReadySockets();
    });
  }
}

void HeartbeatReader::takeReadySockets() {
  epoll_event events[16];
  const int ready = epoll_wait(readiness_.native_handle(), events, 16, 0);
  for (int i = 0; i < ready; ++i) {
    // One-shot: the socket is out of the set now, until watch() arms it again.
    const size_t index = events[i].data.u64;
    Slot& slot = slots_[index];
    const auto previous = slot.lastRead;
    read(index);
    // A worker that beats once a step is watched again at once: one wake-up a beat. One that
    // beat again within a window's length rests, and is read with the others in batches;
    // unless it floods, until its beats come further apart than the shortest window.
    const auto gap = previous ? *slot.lastRead - *previous : std::chrono::steady_clock::duration::max();
    if (slot.flooding && gap >= kShortestReadWindow) slot.flooding = false;
    if (gap < kLongestReadWindow && !slot.flooding) {
      rest(index);
    } else {
      watch(index);
    }
  }
  waitForReadiness();
}

void HeartbeatReader::rest(size_t index) {
  slots_[index].resting = true;
  openWindow();
}

void HeartbeatReader::openWindow() {
  if (windowOpen_) return;
  windowOpen_ = true;
  windowTimer_->expireAfter(window_, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.lock()) endWindow();
  });
}

void HeartbeatReader::endWindow() {
  windowOpen_ = false;
  int fullest = 0;
  for (size_t index = 0; index < slots_.size(); ++index) {
    if (!slots_[index].resting) continue;
    const int datagrams = read(index);
    fullest = std::max(fullest, datagrams);
    // Empty: watched until its next beat. Full: its sender may be waiting for room (a
    // blocking socket beating faster than the shortest window drains), so it floods: it is
    // served as each datagram comes, as before batching, until its beats slow down.
    if (datagrams >= queueLimit_) slots_[index].flooding = true;
    if (datagrams == 0 || slots_[index].flooding) {
      slots_[index].resting = false;
      watch(index);
    }
  }
  window_ = nextReadWindow(window_, fullest, queueLimit_);
  if (std::any_of(slots_.begin(), slots_.end(), [](const Slot& slot) { return slot.resting; })) openWindow();
}

int HeartbeatReader::read(size_t index) {
  const DrainedHeartbeats found = slots_[index].socket->drain(kReadLimit);
  if (found.datagrams > 0) slots_[index].lastRead = std::chrono::steady_clock::now();
  if (found.beat) onBeat_(index, found.counter);
  return found.datagrams;
}

}  // namespace pltrun
