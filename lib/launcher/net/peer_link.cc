#include "launcher/net/peer_link.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <istream>

#include "pltrun/error.h"

namespace pltrun {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr const char* kGreeting = "pltrun-peer-link ";
// A greeting is one short line; a peer that sends more is not a pltrun agent.
constexpr size_t kGreetingLimit = 512;
// Links a listener holds at once: one per round from its ring neighbour, a few more while
// rounds change; anything beyond is not an agent of this job.
constexpr size_t kMaxAcceptedLinks = 64;

}  // namespace

struct PeerLinkListener::Accepted : std::enable_shared_from_this<PeerLinkListener::Accepted> {
  explicit Accepted(asio::io_context& context) : socket(context) {}

  // What comes is discarded; the link is dropped once its other end closes it.
  void drain() {
    socket.async_read_some(asio::buffer(sink), [self = shared_from_this()](boost::system::error_code error, size_t) {
      if (error == asio::error::operation_aborted) return;
      if (!error) return self->drain();
      if (self->onClosed) self->onClosed();
    });
  }

  tcp::socket socket;
  char sink[256];
  std::function<void()> onClosed;
};

PeerLinkListener::PeerLinkListener(asio::io_context& context, const std::string& address, std::string agentId)
    : acceptor_(context) {
  greetAs(agentId);
  boost::system::error_code error;
  const tcp::endpoint endpoint(asio::ip::make_address(address, error), 0);
  if (!error) acceptor_.open(endpoint.protocol(), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    throw Error(ErrorCode::Network, "cannot listen for peer links on " + address + ": " + error.message());
  }
  port_ = acceptor_.local_endpoint().port();
  acceptNext();
}

void PeerLinkListener::greetAs(const std::string& agentId) {
  greeting_ = std::make_shared<const std::string>(kGreeting + agentId + "\n");
}

// Each accepted link gets the greeting, then is held until the other end closes it.
void PeerLinkListener::acceptNext() {
  auto link = std::make_shared<Accepted>(static_cast<asio::io_context&>(acceptor_.get_executor().context()));
  acceptor_.async_accept(link->socket, [this, link](boost::system::error_code error) {
    if (error == asio::error::operation_aborted) return;
    if (!error && links_.size() < kMaxAcceptedLinks) {
      links_.push_back(link);
      link->onClosed = [this, position = std::prev(links_.end())] { links_.erase(position); };
      asio::async_write(link->socket, asio::buffer(*greeting_),
                        [greeting = greeting_](boost::system::error_code, size_t) {});
      link->drain();
    }
    acceptNext();
  });
}

struct PeerLink::State : std::enable_shared_from_this<PeerLink::State> {
  State(asio::io_context& context, std::string peerAgentId, OnLost onLost, OnUnlinked onUnlinked)
      : socket(context),
        expected(kGreeting + peerAgentId),
        onLost(std::move(onLost)),
        onUnlinked(std::move(onUnlinked)),
        greeting(kGreetingLimit) {}

  void connect(const std::string& host, int port) {
    boost::system::error_code error;
    tcp::resolver resolver(socket.get_executor());
    const auto addresses = resolver.resolve(host, std::to_string(port), error);
    if (error) return unlinked("cannot resolve " + host + ": " + error.message());
    asio::async_connect(socket, addresses,
                        [self = shared_from_this()](boost::system::error_code e, const tcp::endpoint&) {
                          if (self->closed) return;
                          if (e) return self->unlinked(e.message());
                          self->readGreeting();
                        });
  }

  void readGreeting() {
    asio::async_read_until(socket, greeting, '\n', [self = shared_from_this()](boost::system::error_code e, size_t) {
      if (self->closed) return;
      if (e) return self->unlinked("no greeting: " + e.message());
      std::istream in(&self->greeting);
      std::string line;
      std::getline(in, line);
      if (line != self->expected) return self->unlinked("another process answers there");
      self->awaitEnd();
    });
  }

  // Nothing is ever sent on a made link: any completed read means its end.
  void awaitEnd() {
    socket.async_read_some(asio::buffer(sink), [self = shared_from_this()](boost::system::error_code e, size_t) {
      if (self->closed) return;
      if (!e) return self->awaitEnd();
      self->closed = true;
      if (self->onLost) self->onLost(e == asio::error::eof ? "its link closed" : "its link broke: " + e.message());
    });
  }

  void unlinked(const std::string& why) {
    closed = true;
    if (onUnlinked) onUnlinked(why);
  }

  tcp::socket socket;
  std::string expected;
  OnLost onLost;
  OnUnlinked onUnlinked;
  asio::streambuf greeting;
  char sink[64];
  bool closed = false;
};

PeerLink::PeerLink(asio::io_context& context, const std::string& host, int port, std::string peerAgentId, OnLost onLost,
                   OnUnlinked onUnlinked)
    : state_(std::make_shared<State>(context, std::move(peerAgentId), std::move(onLost), std::move(onUnlinked))) {
  state_->connect(host, port);
}

PeerLink::~PeerLink() {
  state_->closed = true;
  boost::system::error_code ignored;
  state_->socket.shutdown(tcp::socket::shutdown_both, ignored);
  state_->socket.close(ignored);
}

}  // namespace pltrun
