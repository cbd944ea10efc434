#include "rendezvous/store_server.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include "pltrun/error.h"
#include "rendezvous/store_session.h"

namespace pltrun::rdzv {

namespace asio = boost::asio;
using asio::ip::tcp;

std::uint64_t raiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur;
}

StoreServer::StoreServer(asio::io_context& context, StoreServerOptions options)
    : context_(context),
      options_(std::move(options)),
      acceptor_(context),
      retryTimer_(context),
      table_(TableLimits{options_.limits.maxValueSize, options_.maxStoreBytes, options_.maxStoreKeys}) {
  boost::system::error_code error;
  auto address = asio::ip::make_address(options_.host, error);
  if (error) {
    // A host name: listen on what it resolves to first.
    tcp::resolver resolver(context);
    auto results = resolver.resolve(options_.host, std::to_string(options_.port), error);
    if (error || results.empty()) {
      throw Error(ErrorCode::Network, "cannot resolve store address '" + options_.host + "': " + error.message());
    }
    address = results.begin()->endpoint().address();
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
  acceptor_.open(endpoint.protocol(), error);
  if (!error) acceptor_.set_option(tcp::acceptor::reuse_address(true), error);
  if (!error) acceptor_.bind(endpoint, error);
  if (!error) acceptor_.listen(asio::socket_base::max_listen_connections, error);
  if (error == asio::error::address_in_use) {
    throw AddressInUse(ErrorCode::Network, "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                                               ": " + error.message());
  }
  if (error) {
    throw Error(ErrorCode::Network, "cannot listen on " + options_.host + ":" + std::to_string(options_.port) + ": " +
                                        error.message() + (options_.port != 0 ? " (choose another port, or 0 for a free one)" : ""));
  }
  port_ = acceptor_.local_endpoint().port();
}

StoreServer::~StoreServer() { stop(); }

void StoreServer::start() { acceptNext(); }

void StoreServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  retryTimer_.cancel();
  auto sessions = std::move(sessions_);
  sessions_.clear();
  for (auto& [id, session] : sessions) session->close("");
}

void StoreServer::acceptNext() {
  acceptor_.async_accept([this](boost::system::error_code error, tcp::socket socket) {
    if (stopped_) return;
    if (error) {
      // Out of descriptors and the like: keep serving the connections we have, and try
      // again a little later rather than spinning on the same error.
      spdlog::warn("store: accept failed: {}", error.message());
      retryTimer_.expires_after(std::chrono::milliseconds(100));
      retryTimer_.async_wait([this](boost::system::error_code timerError) {
        if (!timerError && !stopped_) acceptNext();
      });
      return;
    } else if (sessions_.size() >= options_.maxConnections) {
      spdlog::warn("store: refusing a connection: {} connections is the limit", options_.maxConnections);
    } else {
      auto id = nextSessionId_++;
      auto session = std::make_shared<StoreSession>(std::move(socket), *this, id);
      sessions_.emplace(id, session);
      session->start();
    }
    acceptNext();
  });
}

void StoreServer::sessionClosed(StoreTable::OwnerId id) { sessions_.erase(id); }

}  // namespace pltrun::rdzv
