#pragma once
// One client connection of the store server: the Asio shell around its state machine
// (store_connection.h). It reads the socket's bytes into the machine, writes the replies
// it gives, runs one timer for its deadlines, posts its wakeups to the event loop, and
// closes the socket (telling the server) when the machine says so.

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>

#include "rendezvous/store/server/store_connection.h"
#include "rendezvous/store/store_table.h"

namespace pltrun::rdzv {

class SessionHost;

class StoreSession : public std::enable_shared_from_this<StoreSession> {
 public:
  StoreSession(boost::asio::ip::tcp::socket socket, SessionHost& server, StoreTable::OwnerId id);

  void start();
  /// Ends the connection; `reason` is logged when not empty.
  void close(const std::string& reason);

 private:
  using Clock = StoreConnection::Clock;

  void readMore();
  /// Reads what the socket holds into the machine, within the buffer budget.
  void readAvailable();
  /// Does what the machine asked after an event.
  void perform(const ConnectionStep& step);
  void closeSocket(const std::string& reason);
  void flush();
  void onWritten(boost::system::error_code error);
  /// Arms the timer for the machine's next deadline when it comes sooner than the armed one.
  void armTimer();
  void onKeysReady(std::uint64_t generation);

  boost::asio::ip::tcp::socket socket_;
  SessionHost& server_;
  StoreTable::OwnerId id_;
  std::string peer_;
  StoreConnection connection_;
  std::string writing_;  ///< the replies async_write is writing
  boost::asio::steady_timer timer_;
  std::optional<Clock::time_point> timerArmedFor_;
};

}  // namespace pltrun::rdzv
