#include "rendezvous/store/server/store_connection.h"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <utility>

namespace pltrun::rdzv {
namespace {

std::string milliseconds(std::chrono::milliseconds duration) { return std::to_string(duration.count()) + " ms"; }

}  // namespace

StoreConnection::StoreConnection(const StoreServerOptions& options, StoreTable& table, BufferBudget& buffers,
                                 StoreTable::OwnerId id, Waker waker, Clock::time_point now)
    : options_(options),
      table_(table),
      buffers_(buffers),
      id_(id),
      waker_(std::move(waker)),
      authenticated_(options.secret.empty()) {
  armIdleTimer(now);
  // With a secret, a connection has a few seconds to prove it: one that stays silent, or
  // trickles, cannot hold a connection slot (or buffers) for long.
  if (!authenticated_) authDeadline_ = now + options_.authTimeout;
}

ConnectionStep StoreConnection::takeStep() { return std::exchange(step_, ConnectionStep{}); }

ConnectionStep StoreConnection::finish(bool read) {
  step_.readMore = read && !closed_;
  return takeStep();
}

ConnectionStep StoreConnection::close(const std::string& reason) {
  end(reason);
  return takeStep();
}

void StoreConnection::end(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  step_.closed = true;
  step_.closeReason = reason;
  dropParked();
  table_.dropOwner(id_);  // ephemeral keys go with their connection; its close notice fires
  releaseBuffered(heldInput_, heldInput_);
  releaseBuffered(heldReplies_, heldReplies_);
  requestDeadline_.reset();
  idleDeadline_.reset();
  authDeadline_.reset();
}

// Reads no more than the buffer budget has room for: a small store (--max-store-bytes below
// the 64 KiB a read may bring) takes a client's pipelined requests a part at a time. Room
// is what input_ holds already, charged, or a new buffer of what the budget has left
// (reserveInput charges the old and the new one together while it copies).
std::uint64_t StoreConnection::readRoom(std::uint64_t most) {
  if (closed_) return 0;
  const std::uint64_t buffered = input_.size(), left = buffers_.limit() - buffers_.held();
  const std::uint64_t room =
      std::max(heldInput_ > buffered ? heldInput_ - buffered : 0, left > buffered ? left - buffered : 0);
  if (room == 0) {
    holdBuffered(heldInput_, left + 1, "its requests");  // refused: says why
    return 0;
  }
  return std::min(most, room);
}

ConnectionStep StoreConnection::onBytes(std::string_view bytes, Clock::time_point now) {
  if (closed_ || (!bytes.empty() && !appendInput(bytes))) return takeStep();
  armIdleTimer(now);
  processInputSafely(now);
  return finish(!closed_ && readIfRoom());
}

bool StoreConnection::appendInput(std::string_view bytes) {
  try {
    if (!reserveInput(input_.size() + bytes.size())) return false;
    input_.append(bytes);
  } catch (const std::bad_alloc&) {
    end("out of memory buffering its request");
    return false;
  }
  return true;
}

// Grows input_ itself, as std::string would (doubling), or to exactly what is needed when
// doubling would pass the budget. What is charged is what is allocated, the old buffer and
// the new one together while the bytes are copied from one to the other.
bool StoreConnection::reserveInput(size_t needed) {
  if (needed <= input_.capacity()) return true;
  size_t capacity = std::max(needed, 2 * input_.capacity());
  if (capacity > buffers_.limit() - buffers_.held()) capacity = needed;
  if (!holdBuffered(heldInput_, capacity, "its requests")) return false;
  input_.reserve(capacity);
  releaseBuffered(heldInput_, heldInput_ - std::min<std::uint64_t>(heldInput_, input_.capacity()));
  return true;
}

bool StoreConnection::holdBuffered(std::uint64_t& held, std::uint64_t bytes, const char* what) {
  if (buffers_.take(bytes)) {
    held += bytes;
    return true;
  }
  end(std::string(what) + " would take the buffers of all connections past their limit of " +
      std::to_string(buffers_.limit()) + " bytes (--max-store-bytes)");
  return false;
}

void StoreConnection::releaseBuffered(std::uint64_t& held, std::uint64_t bytes) {
  bytes = std::min(bytes, held);
  held -= bytes;
  buffers_.give(bytes);
}

// Backpressure: a client that does not read its replies (or sends while its WAIT is
// parked) is not read from either, so it cannot take the server's memory.
bool StoreConnection::readIfRoom() {
  const size_t requests = input_.size() - inputStart_;
  if (parked_ && requests > kParkedInputLimit) {
    end("sent " + std::to_string(requests) + " bytes while its WAIT was parked (a client sends only CANCEL_WAIT then)");
    return false;
  }
  if (repliesPending() > kReplyHighWater) {
    readPaused_ = true;  // onWritten resumes reading once the replies are written
    return false;
  }
  readPaused_ = false;
  return true;
}

bool StoreConnection::takeReplies(std::string& writing) {
  if (writing_ != 0 || outbox_.empty() || closed_) return false;
  writing.swap(outbox_);
  outbox_.clear();
  writing_ = writing.size();
  return true;
}

ConnectionStep StoreConnection::onWritten(Clock::time_point now) {
  const size_t written = std::exchange(writing_, 0);
  if (closed_) return takeStep();
  releaseBuffered(heldReplies_, written);
  if (decodePaused_ && repliesPending() <= kReplyHighWater) {
    decodePaused_ = false;
    processInputSafely(now);
    if (closed_) return takeStep();
  }
  // Replies still waiting are written next (the shell takes them): reading waits for them.
  return finish(readPaused_ && outbox_.empty() && readIfRoom());
}

void StoreConnection::processInputSafely(Clock::time_point now) {
  try {
    processInput(now);
  } catch (const std::bad_alloc&) {
    // One connection's request or reply too large for the memory left: that connection
    // goes, the store and every other client stay.
    end("out of memory serving its request");
  }
}

void StoreConnection::processInput(Clock::time_point now) {
  while (!closed_ && inputStart_ < input_.size() && serveNextRequest()) {
  }
  if (closed_) return;
  compactInput();
  armRequestTimer(now);
}

bool StoreConnection::serveNextRequest() {
  // Checked before every request, not only between reads: one read may hold thousands of
  // small requests whose replies are large.
  if (repliesPending() > kReplyHighWater) {
    decodePaused_ = true;
    return false;
  }
  std::optional<DecodeResult> decoded = decodeNext();
  if (!decoded || !mayOvertakeParked(decoded->request)) return false;
  measure_.reset();
  inputStart_ += decoded->consumed;
  // The request's bytes go before it is served: a WAIT on megabytes of keys is then held
  // once, parked (and charged to the table), not twice. One request at a time is
  // decoded in the whole server (one thread).
  if (inputStart_ == input_.size()) compactInput();
  ++requestsDone_;
  return handle(decoded->request);
}

// The request at inputStart_ when it is whole; none when more bytes are needed or the
// connection was closed.
std::optional<DecodeResult> StoreConnection::decodeNext() {
  // Before authentication only the small handshake requests can be whole.
  const ProtocolLimits& limits = authenticated_ ? options_.limits : kBeforeAuthenticationLimits;
  std::string_view pending(input_.data() + inputStart_, input_.size() - inputStart_);
  if (!dialect_) {
    dialect_ = detectDialect(pending);
    // A pltrun extension first (authentication): shared by both dialects, decide later.
    if (!dialect_ && static_cast<std::uint8_t>(pending[0]) < 0xA0) return std::nullopt;
  }
  const Dialect dialect = dialect_.value_or(Dialect::Torch2);
  if (!measure_) measure_.emplace(limits);
  const DecodeStatus measured = measure_->advance(dialect, pending);
  // Before authentication a request is refused on its first byte, before its body is
  // buffered: an unauthenticated client cannot make the server hold a large SET.
  if (!authenticated_ && measure_->command() && !allowedBeforeAuthentication(*measure_->command())) {
    refuseUnauthenticated(*measure_->command());
    return std::nullopt;
  }
  if (measured == DecodeStatus::NeedMore) return std::nullopt;
  if (measured != DecodeStatus::Complete) {
    end(measure_->error());
    return std::nullopt;
  }
  DecodeResult decoded = decodeMeasuredRequest(dialect, pending.substr(0, measure_->length()));
  if (decoded.status != DecodeStatus::Complete) {  // not expected: the measure saw it whole
    end(decoded.error);
    return std::nullopt;
  }
  return decoded;
}

// A parked request holds the connection: only its CANCEL_WAIT may overtake it. False: the
// next request waits behind the parked one.
bool StoreConnection::mayOvertakeParked(const Request& next) {
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
void StoreConnection::compactInput() {
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

void StoreConnection::refuseUnauthenticated(Command command) {
  end(std::string("refused ") + commandName(command) +
      ": this store requires pltrun's shared-secret authentication (torch clients cannot use it)");
}

ConnectionStep StoreConnection::onKeysReady(std::uint64_t generation, Clock::time_point now) {
  if (closed_ || !parked_ || generation != parkGeneration_) return takeStep();  // cancelled meanwhile
  Request request = std::move(parked_->request);
  parked_.reset();
  // The client has waited all this time, not idled: its idle time starts with the answer.
  // (Else an answer to a wait longer than the idle timeout was followed at once by the
  // close, before the client could read it.)
  armIdleTimer(now);
  const Command command = request.command;
  try {
    answerWoken(std::move(request));
  } catch (const std::bad_alloc&) {
    end("out of memory building its reply");
    return takeStep();
  } catch (const TableFull& full) {  // parked again, with no room left for its wait
    end(std::string(commandName(command)) + " refused: " + full.what());
    return takeStep();
  }
  if (!parked_) processInputSafely(now);
  return finish(false);
}

// A key may have been deleted between the wakeup and now: park again if so. A barrier is
// released once and for all.
void StoreConnection::answerWoken(Request request) {
  if (request.command == Command::Barrier) {
    answerBarrierReleased();
  } else {
    answerOrPark(std::move(request));
  }
}

std::optional<StoreConnection::Clock::time_point> StoreConnection::nextDeadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& deadline : {requestDeadline_, idleDeadline_, authDeadline_}) {
    if (deadline && (!next || *deadline < *next)) next = deadline;
  }
  return next;
}

ConnectionStep StoreConnection::onTimer(Clock::time_point now) {
  if (authDeadline_ && now >= *authDeadline_) {
    end("did not authenticate within " + milliseconds(options_.authTimeout));
  } else if (requestDeadline_ && now >= *requestDeadline_) {
    end("a request started arriving but was not complete after " + milliseconds(options_.requestTimeout));
  } else if (idleDeadline_ && now >= *idleDeadline_) {
    if (parked_) {
      armIdleTimer(now);  // waiting for keys is not idleness
    } else {
      end("idle for " + milliseconds(options_.idleTimeout));
    }
  }
  return takeStep();
}

// Runs from the moment a request starts arriving until it is complete (re-armed for every
// request), so a client that trickles bytes cannot hold a connection, and its buffer,
// forever.
void StoreConnection::armRequestTimer(Clock::time_point now) {
  const bool partial = inputStart_ < input_.size() && !parked_;
  if (partial && requestDeadline_ && requestsDone_ == timedRequest_) return;  // the same request
  if (!partial) {
    requestDeadline_.reset();
    return;
  }
  timedRequest_ = requestsDone_;
  requestDeadline_ = now + options_.requestTimeout;
}

void StoreConnection::armIdleTimer(Clock::time_point now) {
  if (options_.idleTimeout.count() == 0) return;
  idleDeadline_ = now + options_.idleTimeout;
}

void StoreConnection::send(const std::string& bytes) {
  if (!holdBuffered(heldReplies_, bytes.size(), "its replies")) return;
  outbox_ += bytes;
}

}  // namespace pltrun::rdzv
