#pragma once
// One client connection of the store server as a pure state machine: bytes and events in
// (bytes read, a write completed, a parked request's keys ready, a deadline passed, the
// peer gone), replies and steps out (bytes to write, whether to read more, to close, to
// report the handshake passed). It decodes requests in order, answers them from the
// table, parks WAIT/GET/MULTI_GET/BARRIER until their keys exist, holds the connection's
// buffers within the server's budget, and cleans up (waiters, ephemeral keys, then its
// close notice fires) when the connection ends for whatever reason.
//
// No sockets, no Asio, no clock of its own (every event brings the time): StoreSession
// is the Asio shell that feeds it, and the tests and the fuzzer drive it directly.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "rendezvous/store/server/buffer_budget.h"
#include "rendezvous/store/server/store_server_options.h"
#include "rendezvous/store/store_auth.h"
#include "rendezvous/store/store_protocol.h"
#include "rendezvous/store/store_table.h"

namespace pltrun::rdzv {

/// What the shell does after an event.
struct ConnectionStep {
  bool authenticated = false;  ///< passed the handshake in this event: tell the server
  bool closed = false;         ///< ended in this event: close the socket, tell the server
  std::string closeReason;     ///< why it ended, for the log; empty: nothing to report
  bool readMore = false;       ///< wait for the socket's next bytes
};

class StoreConnection {
 public:
  using Clock = std::chrono::steady_clock;
  /// Called when a parked request's keys are ready, inside another connection's table
  /// update: it must call onKeysReady(generation) later (a later turn of the event loop),
  /// never from inside the call.
  using Waker = std::function<void(std::uint64_t generation)>;

  /// Replies waiting to be written above which the connection's next request is not
  /// decoded, nor more of its bytes read, until the client has read enough of them.
  static constexpr size_t kReplyHighWater = 16 * 1024 * 1024;
  /// Bytes a client may send while its WAIT is parked (CANCEL_WAIT is one byte).
  static constexpr size_t kParkedInputLimit = 4096;

  StoreConnection(const StoreServerOptions& options, StoreTable& table, BufferBudget& buffers, StoreTable::OwnerId id,
                  Waker waker, Clock::time_point now);
  StoreConnection(const StoreConnection&) = delete;
  StoreConnection& operator=(const StoreConnection&) = delete;

  /// The most bytes the next read may bring (no more than `most`): what the buffer budget
  /// has room for. 0: none, and the connection was closed (takeStep() says why).
  std::uint64_t readRoom(std::uint64_t most);
  /// Bytes read from the client (none: woken for nothing).
  ConnectionStep onBytes(std::string_view bytes, Clock::time_point now);
  /// Replies to write now, or none while a write is in flight: swapped into `writing`,
  /// which must be empty; call onWritten once they are written.
  bool takeReplies(std::string& writing);
  ConnectionStep onWritten(Clock::time_point now);
  /// The parked request of this generation may be answered (the Waker's call, later).
  ConnectionStep onKeysReady(std::uint64_t generation, Clock::time_point now);
  /// The earliest deadline (request, idle, authentication) to call onTimer at, if any.
  std::optional<Clock::time_point> nextDeadline() const;
  /// Closes the connection when a deadline has passed (early calls change nothing).
  ConnectionStep onTimer(Clock::time_point now);
  /// The client went away, or the server is stopping: nothing to report.
  ConnectionStep onPeerClosed() { return close(""); }
  /// Ends the connection; `reason` is logged when not empty.
  ConnectionStep close(const std::string& reason);
  /// The step no event returned: the close that readRoom() giving 0 made.
  ConnectionStep takeStep();

  bool closed() const { return closed_; }
  bool authenticated() const { return authenticated_; }
  bool parked() const { return parked_.has_value(); }
  /// Replies waiting for the next write (and after a close, those no write took: the shell
  /// may try to send them before it closes the socket).
  const std::string& outbox() const { return outbox_; }
  /// Reply bytes not yet written: waiting, and in flight.
  size_t repliesPending() const { return outbox_.size() + writing_; }
  /// Of the server's buffer budget, what this connection holds: for its input, and for its
  /// replies (exactly repliesPending() while it is open).
  std::uint64_t heldBuffers() const { return heldInput_ + heldReplies_; }
  std::uint64_t heldForReplies() const { return heldReplies_; }

 private:
  /// A request waiting for its keys: the parked WAIT, GET or MULTI_GET, or a BARRIER
  /// waiting for the last arrival.
  struct Parked {
    Request request;
    StoreTable::WaiterId waiter = 0;
  };

  /// close() within an event: its step is returned when the event ends.
  void end(const std::string& reason);
  /// The step of the events so far; with `read`, whether to read more now.
  ConnectionStep finish(bool read);
  /// Makes room in input_ for `needed` bytes, its capacity charged to the buffer budget
  /// before it is allocated. False: the connection was closed.
  bool reserveInput(size_t needed);
  bool appendInput(std::string_view bytes);
  /// Whether to read more: not while replies wait unread (resumed by onWritten), and a
  /// client that sends much while its WAIT is parked is closed.
  bool readIfRoom();
  /// Takes `bytes` of the server's buffer budget for this connection's input or replies
  /// (`held`); closes the connection when they would pass it.
  bool holdBuffered(std::uint64_t& held, std::uint64_t bytes, const char* what);
  void releaseBuffered(std::uint64_t& held, std::uint64_t bytes);
  /// processInput, closing only this connection when serving it runs out of memory.
  void processInputSafely(Clock::time_point now);
  void processInput(Clock::time_point now);
  /// Decodes and serves the request at inputStart_. False: stop (more bytes needed,
  /// replies unread, a parked request in the way, or the connection closed).
  bool serveNextRequest();
  std::optional<DecodeResult> decodeNext();
  static bool allowedBeforeAuthentication(Command command);
  void refuseUnauthenticated(Command command);
  /// false: the connection was closed. A parked request is moved from `request`, not
  /// copied: a WAIT on megabytes of keys is held once by the connection.
  bool handle(Request& request);
  bool apply(Request& request);  // handle() for an allowed request
  void applyWrite(const Request& request);
  bool answerQuery(const Request& request);  // false: the connection was closed
  // The commands torch 2.8 added (store_connection_torch28.cc).
  bool answerListKeys();
  bool arriveAtBarrier(const Request& request);
  void answerBarrierReleased();
  /// The wakeup of the request about to be parked (a new park generation).
  StoreTable::Wakeup wakeupForNextPark();
  bool mayOvertakeParked(const Request& next);
  void compactInput();
  bool handleHello(const Request& request);
  bool handleProof(const Request& request);
  void answerOrPark(Request request);
  void answerReady(const Request& request);
  void answerWoken(Request request);
  void dropParked();
  void send(const std::string& bytes);
  void armRequestTimer(Clock::time_point now);
  void armIdleTimer(Clock::time_point now);

  const StoreServerOptions& options_;
  StoreTable& table_;
  BufferBudget& buffers_;
  StoreTable::OwnerId id_;
  Waker waker_;
  ConnectionStep step_;
  std::optional<Dialect> dialect_;
  std::string input_;
  size_t inputStart_ = 0;  ///< bytes of input_ already consumed
  /// How far the request at inputStart_ has been measured: its bytes are looked at once,
  /// however many reads it takes to arrive.
  std::optional<RequestMeasure> measure_;
  bool decodePaused_ = false;      ///< too many replies unread: onWritten resumes decoding
  bool readPaused_ = false;        ///< too many replies unread: onWritten resumes reading
  std::uint64_t heldInput_ = 0;    ///< of the buffer budget, for input_'s capacity
  std::uint64_t heldReplies_ = 0;  ///< of the buffer budget, for outbox_ and the write in flight
  std::string outbox_;
  size_t writing_ = 0;  ///< bytes of the write in flight (never 0 while one is: an empty outbox is not taken)
  std::optional<Parked> parked_;
  std::uint64_t parkGeneration_ = 0;
  bool authenticated_ = false;
  std::optional<Handshake> handshake_;  ///< between AUTH_HELLO and AUTH_PROOF
  bool closed_ = false;
  std::uint64_t requestsDone_ = 0;  ///< requests decoded so far on this connection
  std::uint64_t timedRequest_ = 0;  ///< the request the request deadline is for
  /// A request started arriving and must be complete by then (slow clients).
  std::optional<Clock::time_point> requestDeadline_;
  std::optional<Clock::time_point> idleDeadline_;
  std::optional<Clock::time_point> authDeadline_;
};

}  // namespace pltrun::rdzv
