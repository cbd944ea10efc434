#include "rendezvous/store/server/store_session.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "rendezvous/store/server/store_server.h"
#include "rendezvous/store/server/warning_rate.h"

namespace pltrun::rdzv {
namespace {

std::string describePeer(const boost::asio::ip::tcp::socket& socket) {
  boost::system::error_code error;
  auto endpoint = socket.remote_endpoint(error);
  if (error) return "a client";
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

}  // namespace

StoreSession::StoreSession(boost::asio::ip::tcp::socket socket, SessionHost& server, StoreTable::OwnerId id)
    : socket_(std::move(socket)),
      server_(server),
      id_(id),
      peer_(describePeer(socket_)),
      connection_(
          server.options(), server.table(), server.buffers(), id,
          [this](std::uint64_t generation) { onKeysReady(generation); }, Clock::now()),
      timer_(socket_.get_executor()) {
  boost::system::error_code ignored;
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
  socket_.non_blocking(true, ignored);  // readAvailable() takes what is there, never waits
  // A peer whose host died sends no FIN: TCP keepalive probes find it within about 11 s,
  // the connection closes, its ephemeral keys go with it and its close notice fires. Idle
  // torch clients are not affected (their kernel answers the probes).
  int fd = socket_.native_handle();
  int on = 1, idle = 5, interval = 2, count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  // Replies the peer does not acknowledge are given up after the same ~11 s: without this,
  // a reply to a dead host is retransmitted for about 15 minutes, holding the connection
  // and its close notice (which the other agents wait for) all that time.
  unsigned unacknowledgedMs = static_cast<unsigned>((idle + interval * count) * 1000);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &unacknowledgedMs, sizeof unacknowledgedMs);
}

void StoreSession::start() {
  armTimer();
  readMore();
}

void StoreSession::close(const std::string& reason) { perform(connection_.close(reason)); }

void StoreSession::perform(const ConnectionStep& step) {
  if (step.authenticated) server_.sessionAuthenticated(id_);
  if (step.closed) {
    closeSocket(step.closeReason);
    return;
  }
  if (connection_.closed()) return;
  flush();
  armTimer();
  if (step.readMore) readMore();
}

void StoreSession::closeSocket(const std::string& reason) {
  if (!reason.empty()) {
    // A flood of idle connections each timing out must not write a line each.
    static WarningRate closings(std::chrono::seconds(10));
    if (const auto leftOut = closings.admit()) {
      spdlog::warn("store: closing the connection of {}: {}{}", peer_, reason, moreLikeIt(*leftOut));
    }
  }
  timer_.cancel();
  boost::system::error_code ignored;
  // The replies given before the request that ended the connection (a PING answered, then
  // a refused SET) are sent as far as the socket takes them at once, never waited for.
  if (writing_.empty() && !connection_.outbox().empty()) {
    socket_.write_some(boost::asio::buffer(connection_.outbox()), ignored);
  }
  socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  server_.sessionClosed(id_);
}

// Waits until the socket has bytes, then reads them into the server's one read buffer: a
// connection holds no read buffer of its own while it waits (64 KiB each, for thousands of
// idle connections, was most of the server's memory).
void StoreSession::readMore() {
  auto self = shared_from_this();
  socket_.async_wait(boost::asio::ip::tcp::socket::wait_read, [this, self](boost::system::error_code error) {
    if (connection_.closed()) return;
    if (error) {
      perform(connection_.onPeerClosed());  // the server is stopping: nothing to report
      return;
    }
    readAvailable();
  });
}

void StoreSession::readAvailable() {
  const std::uint64_t room = connection_.readRoom(SessionHost::kReadBufferSize);
  if (room == 0) {  // the buffer budget is spent: the machine closed the connection
    perform(connection_.takeStep());
    return;
  }
  boost::system::error_code error;
  const size_t size = socket_.read_some(boost::asio::buffer(server_.readBuffer(), room), error);
  if (error && error != boost::asio::error::would_block) {
    perform(connection_.onPeerClosed());  // the client went away: nothing to report
    return;
  }
  // would_block: woken for nothing, no bytes (the machine goes on as after a read).
  perform(connection_.onBytes(std::string_view(server_.readBuffer(), error ? 0 : size), Clock::now()));
}

void StoreSession::flush() {
  if (!connection_.takeReplies(writing_)) return;
  auto self = shared_from_this();
  boost::asio::async_write(socket_, boost::asio::buffer(writing_),
                           [this, self](boost::system::error_code error, size_t) { onWritten(error); });
}

void StoreSession::onWritten(boost::system::error_code error) {
  // A large reply's buffer is given back, not kept for the next.
  if (writing_.capacity() > SessionHost::kReadBufferSize) {
    std::string().swap(writing_);
  } else {
    writing_.clear();
  }
  perform(error && !connection_.closed() ? connection_.onPeerClosed() : connection_.onWritten(Clock::now()));
}

// One timer for the machine's deadlines: armed again only when the next one comes sooner
// than the one armed. One that fires early (its deadline moved later) changes nothing but
// re-arms it.
void StoreSession::armTimer() {
  const std::optional<Clock::time_point> next = connection_.nextDeadline();
  if (!next || (timerArmedFor_ && *timerArmedFor_ <= *next)) return;
  timerArmedFor_ = next;
  timer_.expires_at(*next);
  std::weak_ptr<StoreSession> weak = weak_from_this();
  timer_.async_wait([weak](boost::system::error_code error) {
    auto self = weak.lock();
    if (error || !self) return;  // cancelled, or re-armed sooner
    self->timerArmedFor_.reset();
    self->perform(self->connection_.onTimer(Clock::now()));
  });
}

// The machine's waker: called inside another connection's table update, so the answer
// comes on a later turn of the event loop, never re-entering the table from inside it.
void StoreSession::onKeysReady(std::uint64_t generation) {
  std::weak_ptr<StoreSession> weak = weak_from_this();
  boost::asio::post(socket_.get_executor(), [weak, generation] {
    if (auto self = weak.lock()) self->perform(self->connection_.onKeysReady(generation, Clock::now()));
  });
}

}  // namespace pltrun::rdzv
