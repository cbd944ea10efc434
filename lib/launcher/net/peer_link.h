#pragma once
// Tells an agent within milliseconds that its neighbour in the round is gone, where the
// rendezvous itself cannot: an etcd lease expires only after its TTL (seconds), while
// `kill -9` of an agent, or of its whole host's network stack, closes its sockets at once.
//
// Every agent accepts links for the whole job (PeerLinkListener); in each round it holds one
// link to the next slot of the ring (PeerLink), so n agents hold n links and every agent is
// watched by exactly one other. The listener greets each link with its agent id, so a link
// that reached some other process on a reused port is refused, not trusted. A host that
// vanishes without closing anything (SIGSTOP, a cut cable) is left to the heartbeats and the
// lease, the backstops.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/streambuf.hpp>
#include <functional>
#include <list>
#include <memory>
#include <string>

namespace pltrun {

class PeerLinkListener {
 public:
  /// Listens on `address` (port 0: the kernel picks one) and greets every link with `agentId`.
  PeerLinkListener(boost::asio::io_context& context, const std::string& address, std::string agentId);
  int port() const { return port_; }
  /// Links accepted from now on are greeted with `agentId` (the agent joined again as a new
  /// node, on the same port); links already made keep their greeting.
  void greetAs(const std::string& agentId);

 private:
  struct Accepted;
  void acceptNext();

  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<const std::string> greeting_;  ///< held by each write until it completes
  int port_ = 0;
  std::list<std::shared_ptr<Accepted>> links_;  ///< open until their other end closes them
};

class PeerLink {
 public:
  /// Called once, on the event loop: the link to the peer broke after it was made.
  using OnLost = std::function<void(const std::string& why)>;
  /// Called once, on the event loop: no link could be made (the peer is watched by the backstops only).
  using OnUnlinked = std::function<void(const std::string& why)>;

  /// Links to the listener at `host`:`port`, which must greet with `peerAgentId`.
  PeerLink(boost::asio::io_context& context, const std::string& host, int port, std::string peerAgentId, OnLost onLost,
           OnUnlinked onUnlinked);
  /// Closes the link: the peer sees an orderly end, and no callback runs any more.
  ~PeerLink();
  PeerLink(const PeerLink&) = delete;
  PeerLink& operator=(const PeerLink&) = delete;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace pltrun
