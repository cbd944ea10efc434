#include "rendezvous/store/server/store_session.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <stdexcept>

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

// Commands allowed before a connection has authenticated: they reveal and change nothing.
bool allowedBeforeAuthentication(Command command) {
  return command == Command::Validate || command == Command::Ping || command == Command::AuthHello ||
         command == Command::AuthProof;
}

}  // namespace

StoreSession::StoreSession(boost::asio::ip::tcp::socket socket, SessionHost& server, StoreTable::OwnerId id)
    : socket_(std::move(socket)),
      server_(server),
      table_(server.table()),
      id_(id),
      peer_(describePeer(socket_)),
      authenticated_(server.options().secret.empty()),
      requestTimer_(socket_.get_executor()),
      idleTimer_(socket_.get_executor()),
      authTimer_(socket_.get_executor()) {
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
  armIdleTimer();
  armAuthTimer();
  readMore();
}

// With a secret, a connection has a few seconds to prove it: one that stays silent, or
// trickles, cannot hold a connection slot (or buffers) for long.
void StoreSession::armAuthTimer() {
  if (authenticated_) return;
  const auto timeout = server_.options().authTimeout;
  authTimer_.expires_after(timeout);
  std::weak_ptr<StoreSession> weak = weak_from_this();
  authTimer_.async_wait([weak, timeout](boost::system::error_code error) {
    auto self = weak.lock();
    if (error || !self || self->authenticated_) return;
    self->close("did not authenticate within " + std::to_string(timeout.count()) + " ms");
  });
}

void StoreSession::close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  if (!reason.empty()) {
    // A flood of idle connections each timing out must not write a line each.
    static WarningRate closings(std::chrono::seconds(10));
    if (const auto leftOut = closings.admit()) {
      spdlog::warn("store: closing the connection of {}: {}{}", peer_, reason, moreLikeIt(*leftOut));
    }
  }
  dropParked();
  table_.dropOwner(id_);  // ephemeral keys go with their connection; its close notice fires
  releaseBuffered(heldInput_, heldInput_);
  releaseBuffered(heldReplies_, heldReplies_);
  requestTimer_.cancel();
  idleTimer_.cancel();
  authTimer_.cancel();
  boost::system::error_code ignored;
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
    if (closed_) return;
    if (error) {
      close("");  // the server is stopping: nothing to report
      return;
    }
    if (!readAvailable()) return;
    armIdleTimer();
    processInputSafely();
    if (!closed_) readIfRoom();
  });
}

// Reads no more than the buffer budget has room for: a small store (--max-store-bytes below
// the 64 KiB a read may bring) takes a client's pipelined requests a part at a time. Room
// is what input_ holds already, charged, or a new buffer of what the budget has left
// (reserveInput charges the old and the new one together while it copies).
bool StoreSession::readAvailable() {
  const BufferBudget& budget = server_.buffers();
  const std::uint64_t buffered = input_.size(), left = budget.limit() - budget.held();
  const std::uint64_t room =
      std::max(heldInput_ > buffered ? heldInput_ - buffered : 0, left > buffered ? left - buffered : 0);
  if (room == 0) return holdBuffered(heldInput_, left + 1, "its requests");  // refused: says why
  boost::system::error_code error;
  const size_t size = socket_.read_some(
      boost::asio::buffer(server_.readBuffer(), std::min<std::uint64_t>(SessionHost::kReadBufferSize, room)), error);
  if (error == boost::asio::error::would_block) return true;  // woken for nothing: wait again
  if (error) {
    close("");  // the client went away: nothing to report
    return false;
  }
  try {
    if (!reserveInput(input_.size() + size)) return false;
    input_.append(server_.readBuffer(), size);
  } catch (const std::bad_alloc&) {
    close("out of memory buffering its request");
    return false;
  }
  return true;
}

// Grows input_ itself, as std::string would (doubling), or to exactly what is needed when
// doubling would pass the budget. What is charged is what is allocated, the old buffer and
// the new one together while the bytes are copied from one to the other.
bool StoreSession::reserveInput(size_t needed) {
  if (needed <= input_.capacity()) return true;
  size_t capacity = std::max(needed, 2 * input_.capacity());
  if (capacity > server_.buffers().limit() - server_.buffers().held()) capacity = needed;
  if (!holdBuffered(heldInput_, capacity, "its requests")) return false;
  input_.reserve(capacity);
  releaseBuffered(heldInput_, heldInput_ - std::min<std::uint64_t>(heldInput_, input_.capacity()));
  return true;
}

bool StoreSession::holdBuffered(std::uint64_t& held, std::uint64_t bytes, const char* what) {
  if (server_.buffers().take(bytes)) {
    held += bytes;
    return true;
  }
  close(std::string(what) + " would take the buffers of all connections past their limit of " +
        std::to_string(server_.buffers().limit()) + " bytes (--max-store-bytes)");
  return false;
}

void StoreSession::releaseBuffered(std::uint64_t& held, std::uint64_t bytes) {
  bytes = std::min(bytes, held);
  held -= bytes;
  server_.buffers().give(bytes);
}

// Backpressure: a client that does not read its replies (or sends while its WAIT is
// parked) is not read from either, so it cannot take the server's memory.
void StoreSession::readIfRoom() {
  const size_t requests = input_.size() - inputStart_;
  if (parked_ && requests > kParkedInputLimit) {
    close("sent " + std::to_string(requests) +
          " bytes while its WAIT was parked (a client sends only CANCEL_WAIT then)");
    return;
  }
  if (repliesPending() > kReplyHighWater) {
    readPaused_ = true;  // flush() resumes reading once the replies are written
    return;
  }
  readPaused_ = false;
  readMore();
}

void StoreSession::processInputSafely() {
  try {
    processInput();
  } catch (const std::bad_alloc&) {
    // One connection's request or reply too large for the memory left: that connection
    // goes, the store and every other client stay.
    close("out of memory serving its request");
  }
}

void StoreSession::processInput() {
  while (!closed_ && inputStart_ < input_.size()) {
    // Before authentication only the small handshake requests can be whole.
    const ProtocolLimits& limits = authenticated_ ? server_.options().limits : kBeforeAuthenticationLimits;
    // Checked before every request, not only between reads: one read may hold thousands of
    // small requests whose replies are large.
    if (repliesPending() > kReplyHighWater) {
      decodePaused_ = true;
      break;
    }
    std::string_view pending(input_.data() + inputStart_, input_.size() - inputStart_);
    if (!dialect_) {
      dialect_ = detectDialect(pending);
      // A pltrun extension first (authentication): shared by both dialects, decide later.
      if (!dialect_ && static_cast<std::uint8_t>(pending[0]) < 0xA0) break;
    }
    const Dialect dialect = dialect_.value_or(Dialect::Torch2);
    if (!measure_) measure_.emplace(limits);
    const DecodeStatus measured = measure_->advance(dialect, pending);
    // Before authentication a request is refused on its first byte, before its body is
    // buffered: an unauthenticated client cannot make the server hold a large SET.
    if (!authenticated_ && measure_->command() && !allowedBeforeAuthentication(*measure_->command())) {
      refuseUnauthenticated(*measure_->command());
      return;
    }
    if (measured == DecodeStatus::NeedMore) break;
    if (measured != DecodeStatus::Complete) {
      close(measure_->error());
      return;
    }
    DecodeResult decoded = decodeMeasuredRequest(dialect, pending.substr(0, measure_->length()));
    if (decoded.status != DecodeStatus::Complete) {  // not expected: the measure saw it whole
      close(decoded.error);
      return;
    }
    if (!mayOvertakeParked(decoded.request)) break;
    measure_.reset();
    inputStart_ += decoded.consumed;
    // The request's bytes go before it is served: a WAIT on megabytes of keys is then held
    // once, parked (and charged to the table), not twice. One request at a time is
    // decoded in the whole server (one thread).
    if (inputStart_ == input_.size()) compactInput();
    ++requestsDone_;
    if (!handle(decoded.request)) return;
  }
  compactInput();
  armRequestTimer();
}

// A parked request holds the connection: only its CANCEL_WAIT may overtake it. False: the
// next request waits behind the parked one.
bool StoreSession::mayOvertakeParked(const Request& next) {
  if (!parked_ || next.command == Command::CancelWait) return true;
  // torch 1.13 clients cannot cancel a wait: they time out locally and go on with the
  // next request, and a 1.13 client sends nothing while it still waits. So a request
  // behind a parked one means the client gave up: drop the wait without a reply,
  // rather than answer it later and put the stream out of step (as torch's own 1.13
  // server does). 2.x clients always send CANCEL_WAIT first, so for them it waits.
  if (dialect_ != Dialect::Torch113) return false;
  table_.cancelWaiter(parked_->waiter);
  parked_.reset();
  ++parkGeneration_;
  return true;
}

// Served bytes leave the buffer: at once when all are served, else once they are half of it
// (erasing the front of a large buffer for every request would be quadratic).
void StoreSession::compactInput() {
  if (inputStart_ == input_.size()) {
    input_.clear();
    inputStart_ = 0;
  } else if (inputStart_ > input_.size() / 2) {
    input_.erase(0, inputStart_);
    inputStart_ = 0;
  }
  // An idle connection holds no buffer (nor budget): only requests still arriving do.
  if (input_.empty()) std::string().swap(input_);
  releaseBuffered(heldInput_, heldInput_ - std::min<std::uint64_t>(heldInput_, input_.capacity()));
}

void StoreSession::refuseUnauthenticated(Command command) {
  close(std::string("refused ") + commandName(command) +
        ": this store requires pltrun's shared-secret authentication (torch clients cannot use it)");
}

bool StoreSession::handle(Request& request) {
  if (!authenticated_ && !allowedBeforeAuthentication(request.command)) {
    refuseUnauthenticated(request.command);
    return false;
  }
  // A queue item promised to this connection's last WAIT is for its QUEUE_POP, next.
  if (request.command != Command::QueuePop) table_.endPromises(id_);
  try {
    return apply(request);
  } catch (const TableFull& full) {
    // The store's byte, key or value limits: this client's write is refused (torch's way
    // to report an error is to close the connection); everything stored stays.
    close(std::string(commandName(request.command)) + " refused: " + full.what());
    return false;
  }
}

bool StoreSession::apply(Request& request) {
  switch (request.command) {
    case Command::Validate:
      return true;  // checked by the decoder; torch expects no reply
    case Command::AuthHello:
      return handleHello(request);
    case Command::AuthProof:
      return handleProof(request);
    case Command::Set:
    case Command::SetEphemeral:
    case Command::OnCloseSet:
    case Command::Append:
    case Command::MultiSet:
    case Command::QueuePush:
      applyWrite(request);
      return true;
    case Command::Wait:
    case Command::Get:
    case Command::MultiGet:
      answerOrPark(std::move(request));
      return !closed_;
    case Command::Barrier:
      return arriveAtBarrier(request);
    default:
      return answerQuery(request);
  }
}

// The writes torch sends no reply to.
void StoreSession::applyWrite(const Request& request) {
  switch (request.command) {
    case Command::Set:
      table_.set(request.keys[0], request.values[0]);
      break;
    case Command::SetEphemeral:
      table_.setEphemeral(request.keys[0], request.values[0], id_);
      break;
    case Command::OnCloseSet:
      table_.setCloseNotice(id_, request.keys[0], request.values[0]);
      break;
    case Command::Append:
      table_.append(request.keys[0], request.values[0]);
      break;
    case Command::MultiSet:
      table_.setMany(request.keys, request.values);
      break;
    case Command::QueuePush:
      table_.queuePush(request.keys[0], request.values[0]);
      break;
    default:
      break;
  }
}

// The requests answered at once, whatever the table holds.
bool StoreSession::answerQuery(const Request& request) {
  std::string reply;
  switch (request.command) {
    case Command::Ping:
      appendU32(reply, static_cast<std::uint32_t>(request.number));
      break;
    case Command::CompareSet:
      appendBytes(reply, table_.compareSet(request.keys[0], request.values[0], request.values[1]));
      break;
    case Command::Add:
      try {
        appendI64(reply, table_.add(request.keys[0], request.number));
      } catch (const std::invalid_argument& error) {
        close(std::string("ADD: ") + error.what());
        return false;
      }
      break;
    case Command::Check:
      appendU8(reply, table_.readyAll(request.keys) ? kCheckReady : kCheckNotReady);
      break;
    case Command::QueuePop: {
      // The length before the pop, then the item when there was one (torch's reply).
      StoreTable::Popped popped = table_.queuePop(request.keys[0], id_);
      appendI64(reply, popped.lengthBefore);
      if (popped.lengthBefore > 0) appendBytes(reply, popped.value);
      break;
    }
    case Command::QueueLen:
      appendI64(reply, table_.queueLength(request.keys[0]));
      break;
    case Command::ListKeys:
      return answerListKeys();
    case Command::GetNumKeys:
      appendI64(reply, table_.size());
      break;
    case Command::DeleteKey:
      appendI64(reply, table_.erase(request.keys[0]));
      break;
    case Command::CancelWait:
      // Answered even when the wait already ended: the client reads one WAIT_CANCELED
      // after a possible STOP_WAITING.
      dropParked();
      appendU8(reply, kWaitCanceled);
      break;
    default:
      close(std::string("unexpected ") + commandName(request.command));
      return false;
  }
  send(reply);
  return true;
}

// The server proves the secret first, over the client's nonce and its own: a client
// learns whether this is its job's store before it sends anything of its own.
bool StoreSession::handleHello(const Request& request) {
  const StoreServerOptions& options = server_.options();
  if (options.secret.empty()) {
    close(
        "AUTH_HELLO refused: this store has no shared secret (the client has one: give the store the same "
        "secret, or the client none)");
    return false;
  }
  const std::string& context = request.keys[0];
  if (!options.context.empty() && context != options.context) {
    close("AUTH_HELLO refused: the client is in run " + printableKey(context) + "; this store serves run " +
          printableKey(options.context));
    return false;
  }
  handshake_ = Handshake{request.values[0], randomBytes(kAuthNonceSize), context};
  const Digest proof = serverProof(options.secret, *handshake_);
  std::string reply = handshake_->serverNonce;
  reply.append(reinterpret_cast<const char*>(proof.data()), proof.size());
  send(reply);
  return true;
}

bool StoreSession::handleProof(const Request& request) {
  const std::string& secret = server_.options().secret;
  if (!handshake_) {  // only a store with a secret answers AUTH_HELLO
    close("AUTH_PROOF without AUTH_HELLO");
    return false;
  }
  const Digest expected = clientProof(secret, *handshake_);
  handshake_.reset();  // one proof per handshake: no second guess, no replay
  if (!digestsEqual(expected, digestOf(request.values[0]))) {
    close("authentication failed: wrong shared secret");
    return false;
  }
  authenticated_ = true;
  authTimer_.cancel();
  server_.sessionAuthenticated(id_);
  std::string reply;
  appendU8(reply, kAuthAccepted);
  send(reply);
  return true;
}

void StoreSession::answerOrPark(Request request) {
  // WAIT is also the first half of a blocking queue pop: an item in a queue of that name
  // counts. GET and MULTI_GET need the keys' values.
  const bool queueItemsCount = request.command == Command::Wait;
  if (queueItemsCount ? table_.readyAll(request.keys) : table_.containsAll(request.keys)) {
    answerReady(request);
    return;
  }
  StoreTable::WaiterId waiter = table_.addWaiter(request.keys, wakeupForNextPark(), queueItemsCount);
  parked_ = Parked{std::move(request), waiter};
}

StoreTable::Wakeup StoreSession::wakeupForNextPark() {
  std::uint64_t generation = ++parkGeneration_;
  std::weak_ptr<StoreSession> weak = weak_from_this();
  auto executor = socket_.get_executor();
  // The wakeup runs inside another connection's table update: answer on a later turn of
  // the event loop, never re-entering the table from inside it.
  return [weak, executor, generation] {
    boost::asio::post(executor, [weak, generation] {
      if (auto self = weak.lock()) self->onKeysReady(generation);
    });
  };
}

// Forgets the parked request (a CANCEL_WAIT, or the connection closing). A WAIT may have
// been woken by a queue item meanwhile: the item then wakes the next waiter instead.
void StoreSession::dropParked() {
  if (!parked_) return;
  table_.cancelWaiter(parked_->waiter);
  if (parked_->request.command == Command::Wait) table_.passOnQueueItems(parked_->request.keys);
  parked_.reset();
  ++parkGeneration_;
}

void StoreSession::onKeysReady(std::uint64_t generation) {
  if (closed_ || !parked_ || generation != parkGeneration_) return;  // cancelled meanwhile
  Request request = std::move(parked_->request);
  parked_.reset();
  // The client has waited all this time, not idled: its idle time starts with the answer.
  // (Else an answer to a wait longer than the idle timeout was followed at once by the
  // close, before the client could read it.)
  armIdleTimer();
  // A key may have been deleted between the wakeup and now: park again if so. A barrier
  // is released once and for all.
  try {
    if (request.command == Command::Barrier) {
      answerBarrierReleased();
    } else {
      answerOrPark(std::move(request));
    }
  } catch (const std::bad_alloc&) {
    close("out of memory building its reply");
    return;
  } catch (const TableFull& full) {  // parked again, with no room left for its wait
    close(std::string(commandName(request.command)) + " refused: " + full.what());
    return;
  }
  if (!parked_) processInputSafely();
}

void StoreSession::answerReady(const Request& request) {
  std::string reply;
  if (request.command == Command::Wait) {
    table_.promiseQueueItems(id_, request.keys);
    appendU8(reply, kWaitStop);
  } else {
    // Sized before it is built: a small MULTI_GET naming one large value many times must
    // not make the server allocate gigabytes.
    const std::uint64_t limit = server_.options().limits.maxReplySize;
    std::uint64_t size = 0;
    for (const std::string& key : request.keys) {
      size += sizeof(std::uint64_t) + table_.peek(key)->size();
      if (size > limit) {
        close(std::string(commandName(request.command)) + " of " + std::to_string(request.keys.size()) +
              " keys would need a reply of more than " + std::to_string(limit) + " bytes; ask for fewer keys");
        return;
      }
    }
    reply.reserve(size);
    for (const std::string& key : request.keys) appendBytes(reply, *table_.peek(key));
  }
  send(reply);
}

void StoreSession::send(const std::string& bytes) {
  if (!holdBuffered(heldReplies_, bytes.size(), "its replies")) return;
  outbox_ += bytes;
  flush();
}

void StoreSession::flush() {
  if (writeInFlight_ || outbox_.empty() || closed_) return;
  writing_.swap(outbox_);
  outbox_.clear();
  writeInFlight_ = true;
  auto self = shared_from_this();
  boost::asio::async_write(socket_, boost::asio::buffer(writing_),
                           [this, self](boost::system::error_code error, size_t) {
                             writeInFlight_ = false;
                             const size_t written = writing_.size();
                             // A large reply's buffer is given back, not kept for the next.
                             if (writing_.capacity() > SessionHost::kReadBufferSize) {
                               std::string().swap(writing_);
                             } else {
                               writing_.clear();
                             }
                             if (closed_) return;
                             releaseBuffered(heldReplies_, written);
                             if (error) {
                               close("");
                               return;
                             }
                             flush();
                             if (decodePaused_ && repliesPending() <= kReplyHighWater) {
                               decodePaused_ = false;
                               processInputSafely();
                               if (closed_) return;
                             }
                             if (readPaused_ && !writeInFlight_) readIfRoom();
                           });
}

void StoreSession::armRequestTimer() {
  // Runs from the moment a request starts arriving until it is complete (re-armed for
  // every request), so a client that trickles bytes cannot hold a connection, and its
  // buffer, forever.
  const bool partial = inputStart_ < input_.size() && !parked_;
  const bool sameRequest = partial && requestTimerArmed_ && requestsDone_ == timedRequest_;
  if (sameRequest) return;
  ++requestTimerGeneration_;
  requestTimerArmed_ = partial;
  if (!partial) {
    requestTimer_.cancel();
    return;
  }
  timedRequest_ = requestsDone_;
  auto timeout = server_.options().requestTimeout;
  requestTimer_.expires_after(timeout);
  std::weak_ptr<StoreSession> weak = weak_from_this();
  requestTimer_.async_wait([weak, timeout, generation = requestTimerGeneration_](boost::system::error_code error) {
    auto self = weak.lock();
    // A stale expiry (queued before the timer was re-armed or cancelled) changes nothing.
    if (error || !self || generation != self->requestTimerGeneration_) return;
    self->close("a request started arriving but was not complete after " + std::to_string(timeout.count()) + " ms");
  });
}

void StoreSession::armIdleTimer() {
  auto timeout = server_.options().idleTimeout;
  if (timeout.count() == 0) return;
  idleTimer_.expires_after(timeout);
  std::weak_ptr<StoreSession> weak = weak_from_this();
  idleTimer_.async_wait([weak, timeout](boost::system::error_code error) {
    auto self = weak.lock();
    if (error || !self) return;
    // Re-armed after this wait had already completed (its handler was queued): the newer
    // wait decides. Without this a client answered just then was closed as idle at once.
    if (self->idleTimer_.expiry() > std::chrono::steady_clock::now()) return;
    if (self->parked_) {  // waiting for keys is not idleness
      self->armIdleTimer();
      return;
    }
    self->close("idle for " + std::to_string(timeout.count()) + " ms");
  });
}

}  // namespace pltrun::rdzv
