#include "rendezvous/store/server/store_server.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "pltrun/error.h"
#include "rendezvous/store/server/store_session.h"
#include "rendezvous/store/server/warning_rate.h"

namespace pltrun::rdzv {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// The descriptors this server may hold for connections (StoreServerOptions::descriptorBudget).
size_t descriptorBudget(const StoreServerOptions& options) {
  if (options.descriptorBudget != 0) return options.descriptorBudget;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return options.maxConnections;
  constexpr rlim_t kOwnUse = 64;  // the listener, the spare, logs, the process's own files
  return limit.rlim_cur > 2 * kOwnUse ? static_cast<size_t>(limit.rlim_cur - kOwnUse)
                                      : static_cast<size_t>(limit.rlim_cur / 2);
}

}  // namespace

size_t openFileLimitShare(size_t parts, size_t whole) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;  // 0: no budget of its own
  return std::max<size_t>(1, static_cast<size_t>(limit.rlim_cur) * parts / whole);
}

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
    : options_(std::move(options)),
      acceptor_(context),
      retryTimer_(context),
      table_(TableLimits{options_.limits.maxValueSize, options_.maxStoreBytes, options_.maxStoreKeys}),
      buffers_(options_.maxStoreBytes) {
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
                                        error.message() +
                                        (options_.port != 0 ? " (choose another port, or 0 for a free one)" : ""));
  }
  port_ = acceptor_.local_endpoint().port();
  spareDescriptor_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  maxConnections_ = std::max<size_t>(1, std::min(options_.maxConnections, descriptorBudget(options_)));
}

StoreServer::~StoreServer() {
  stop();
  if (spareDescriptor_ >= 0) ::close(spareDescriptor_);
}

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
    if ((error == asio::error::no_descriptors || error.value() == ENFILE) && shedConnectionWithoutDescriptors()) {
      acceptNext();
      return;
    }
    if (error) {
      // Anything else: keep serving the connections we have, and try again a little later
      // rather than spinning on the same error.
      if (error != asio::error::no_descriptors && error.value() != ENFILE) {
        spdlog::warn("store: accept failed: {}", error.message());
      }
      retryTimer_.expires_after(std::chrono::milliseconds(100));
      retryTimer_.async_wait([this](boost::system::error_code timerError) {
        if (!timerError && !stopped_) acceptNext();
      });
      return;
    }
    admit(std::move(socket));
    acceptNext();
  });
}

void StoreServer::admit(tcp::socket socket) {
  const bool secured = !options_.secret.empty();
  if (secured && pending_.size() >= maxPending()) {
    evictOldestPending("too many connections waiting to authenticate; this one waited longest");
  }
  if (sessions_.size() >= maxConnections_) {
    if (pending_.empty()) {
      static WarningRate refusals(std::chrono::seconds(10));
      if (const auto leftOut = refusals.admit()) {
        spdlog::warn("store: refusing a connection: {} connections is the limit{}", maxConnections_,
                     moreLikeIt(*leftOut));
      }
      return;  // the socket closes as it goes out of scope
    }
    evictOldestPending("the connection limit is reached; this one waited longest to authenticate");
  }
  auto id = nextSessionId_++;
  auto session = std::make_shared<StoreSession>(std::move(socket), *this, id);
  sessions_.emplace(id, session);
  if (secured) pending_.insert(id);
  session->start();
}

void StoreServer::evictOldestPending(const std::string& reason) {
  if (pending_.empty()) return;
  auto found = sessions_.find(*pending_.begin());
  pending_.erase(pending_.begin());
  if (found != sessions_.end()) {
    std::shared_ptr<StoreSession> session = found->second;  // close() erases it from sessions_
    session->close(reason);
  }
}

bool StoreServer::shedConnectionWithoutDescriptors() {
  if (spareDescriptor_ >= 0) {
    ::close(spareDescriptor_);
    int fd = ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      // One line per 10 s at most, however many connections come.
      if (const auto leftOut = shedWarnings_.admit()) {
        spdlog::warn(
            "store: out of file descriptors: closed {} new connection(s) at once; raise the open-file limit "
            "(ulimit -n) or lower --max-connections",
            *leftOut + 1);
      }
    }
    spareDescriptor_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  // Without the spare back, accepting again at once would spin: wait a little instead.
  return spareDescriptor_ >= 0;
}

void StoreServer::sessionClosed(StoreTable::OwnerId id) {
  sessions_.erase(id);
  pending_.erase(id);
}

}  // namespace pltrun::rdzv
