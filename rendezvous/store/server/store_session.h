#pragma once
// One client connection of the store server: decodes requests in order, answers them from
// the table, parks WAIT/GET/MULTI_GET until their keys exist, and cleans up (waiters,
// ephemeral keys, then its close notice fires) when the connection ends for whatever reason.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>

#include "rendezvous/store/store_auth.h"
#include "rendezvous/store/store_protocol.h"
#include "rendezvous/store/store_table.h"

namespace pltrun::rdzv {

class SessionHost;

class StoreSession : public std::enable_shared_from_this<StoreSession> {
 public:
  /// Replies waiting to be written above which the connection's next request is not
  /// decoded, nor more of its bytes read, until the client has read enough of them.
  static constexpr size_t kReplyHighWater = 16 * 1024 * 1024;
  /// Bytes a client may send while its WAIT is parked (CANCEL_WAIT is one byte).
  static constexpr size_t kParkedInputLimit = 4096;

  StoreSession(boost::asio::ip::tcp::socket socket, SessionHost& server, StoreTable::OwnerId id);

  void start();
  /// Ends the connection; `reason` is logged when not empty.
  void close(const std::string& reason);

 private:
  /// A request waiting for its keys: the parked WAIT, GET or MULTI_GET, or a BARRIER
  /// waiting for the last arrival.
  struct Parked {
    Request request;
    StoreTable::WaiterId waiter = 0;
  };

  void readMore();
  /// Copies what the socket holds into input_, within the buffer budget. False: the
  /// connection was closed.
  bool readAvailable();
  /// Makes room in input_ for `needed` bytes, its capacity charged to the buffer budget
  /// before it is allocated. False: the connection was closed.
  bool reserveInput(size_t needed);
  void readIfRoom();
  /// Takes `bytes` of the server's buffer budget for this connection's input or replies
  /// (`held`); closes the connection when they would pass it.
  bool holdBuffered(std::uint64_t& held, std::uint64_t bytes, const char* what);
  void releaseBuffered(std::uint64_t& held, std::uint64_t bytes);
  /// processInput, closing only this connection when serving it runs out of memory.
  void processInputSafely();
  void processInput();
  size_t repliesPending() const { return outbox_.size() + writing_.size(); }
  void refuseUnauthenticated(Command command);
  /// false: the connection was closed. A parked request is moved from `request`, not
  /// copied: a WAIT on megabytes of keys is held once by the session.
  bool handle(Request& request);
  bool apply(Request& request);  // handle() for an allowed request
  void applyWrite(const Request& request);
  bool answerQuery(const Request& request);  // false: the connection was closed
  // The commands torch 2.8 added (store_session_torch28.cc).
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
  void onKeysReady(std::uint64_t generation);
  void dropParked();
  void send(const std::string& bytes);
  void flush();
  void armRequestTimer();
  void armIdleTimer();
  void armAuthTimer();

  boost::asio::ip::tcp::socket socket_;
  SessionHost& server_;
  StoreTable& table_;
  StoreTable::OwnerId id_;
  std::string peer_;
  std::optional<Dialect> dialect_;
  std::string input_;
  size_t inputStart_ = 0;  ///< bytes of input_ already consumed
  /// How far the request at inputStart_ has been measured: its bytes are looked at once,
  /// however many reads it takes to arrive.
  std::optional<RequestMeasure> measure_;
  bool decodePaused_ = false;      ///< too many replies unread: flush() resumes decoding
  std::uint64_t heldInput_ = 0;    ///< of the buffer budget, for input_'s capacity
  std::uint64_t heldReplies_ = 0;  ///< of the buffer budget, for outbox_ and writing_
  std::string outbox_;
  std::string writing_;
  bool writeInFlight_ = false;
  std::optional<Parked> parked_;
  std::uint64_t parkGeneration_ = 0;
  bool authenticated_ = false;
  std::optional<Handshake> handshake_;  ///< between AUTH_HELLO and AUTH_PROOF
  bool closed_ = false;
  bool readPaused_ = false;
  bool requestTimerArmed_ = false;
  std::uint64_t requestTimerGeneration_ = 0;
  std::uint64_t requestsDone_ = 0;  ///< requests decoded so far on this connection
  std::uint64_t timedRequest_ = 0;  ///< the request the running timer is for
  boost::asio::steady_timer requestTimer_;
  boost::asio::steady_timer idleTimer_;
  boost::asio::steady_timer authTimer_;
};

}  // namespace pltrun::rdzv
