#include "launcher/metrics/metrics_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <thread>

#include "launcher/metrics/metrics_request.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A connection that answered an error waits this long at most for the rest of its request
// before it closes: closing with unread bytes would reset it, and the answer with it.
constexpr std::chrono::milliseconds kLingerLimit{1000};
constexpr size_t kLingerBytes = 1 << 20;

// What the server and its connections share, touched on the server's thread only.
struct ServerState {
  std::function<std::string()> body;
  MetricsServerLimits limits;
  int open = 0;  ///< connections being served
};

// One connection: requests read and answered in turn (keep-alive) until the peer closes, a
// request fails, or the idle timeout passes. It holds a place in ServerState::open while it lives.
class MetricsConnection : public std::enable_shared_from_this<MetricsConnection> {
 public:
  MetricsConnection(tcp::socket socket, ServerState& state)
      : stream_(std::move(socket)), state_(state), buffer_(state.limits.maxRequestBytes + 1) {
    ++state_.open;
  }
  ~MetricsConnection() { --state_.open; }
  MetricsConnection(const MetricsConnection&) = delete;
  MetricsConnection& operator=(const MetricsConnection&) = delete;

  void readRequest() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(std::min<size_t>(state_.limits.maxRequestBytes, UINT32_MAX)));
    parser_->body_limit(0);
    stream_.expires_after(state_.limits.idleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, size_t) { self->onRequest(error); });
  }

 private:
  using Response = http::response<http::string_body>;

  void onRequest(beast::error_code error) {
    if (error) {
      if (const auto status = statusForReadError(error)) answerError(*status);
      return;  // nothing to answer: the connection closes as the last handler lets it go
    }
    const auto& request = parser_->get();
    const auto answer = answerMetricsRequest(request.method_string(), request.target());
    if (answer.status != 200) {
      auto response = errorResponse(answer.status, request.version());
      if (!answer.allow.empty()) response->set(http::field::allow, answer.allow);
      send(std::move(response), false);
      return;
    }
    send(metricsResponse(answer.body, request.version()), request.keep_alive());
  }

  std::shared_ptr<Response> metricsResponse(bool withBody, unsigned version) {
    std::string text;
    try {
      text = state_.body();
    } catch (const std::exception& e) {
      spdlog::warn("metrics: cannot render the metrics: {}", e.what());
      return errorResponse(500, version);
    }
    auto response = std::make_shared<Response>(http::status::ok, version);
    response->set(http::field::content_type, kMetricsContentType);
    response->set(http::field::cache_control, "no-store");
    response->content_length(text.size());  // HEAD: the length a GET would have, no body
    if (withBody) response->body() = std::move(text);
    return response;
  }

  static std::shared_ptr<Response> errorResponse(int status, unsigned version) {
    auto response = std::make_shared<Response>(static_cast<http::status>(status), version);
    response->set(http::field::content_type, "text/plain; charset=utf-8");
    response->body() = std::string(http::obsolete_reason(static_cast<http::status>(status))) + "\n";
    response->prepare_payload();
    return response;
  }

  void answerError(int status) { send(errorResponse(status, 11), false); }

  // Only a 200 keeps the connection. A peer that never reads cannot hold it past the idle
  // timeout either.
  void send(std::shared_ptr<Response> response, bool keepAlive) {
    keepAlive = keepAlive && response->result() == http::status::ok;
    response->keep_alive(keepAlive);
    stream_.expires_after(state_.limits.idleTimeout);
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response, keepAlive](beast::error_code error, size_t) {
                        if (error) return;
                        if (keepAlive) {
                          self->readRequest();
                        } else {
                          self->linger();
                        }
                      });
  }

  // Says it is done writing, then reads (and drops) what the peer still sends, for a little
  // while and a bounded amount, so that the answer reaches the peer before the socket closes.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::min(state_.limits.idleTimeout, kLingerLimit));
    drain();
  }

  void drain() {
    stream_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code error, size_t read) {
      self->drained_ += read;
      if (!error && self->drained_ < kLingerBytes) self->drain();
    });
  }

  beast::tcp_stream stream_;
  ServerState& state_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  std::array<char, 4096> scratch_{};
  size_t drained_ = 0;
};

tcp::endpoint resolveListenAddress(asio::io_context& context, const Endpoint& endpoint,
                                   boost::system::error_code& error) {
  auto address = asio::ip::make_address(endpoint.host, error);
  if (!error) return {address, static_cast<unsigned short>(endpoint.port)};
  tcp::resolver resolver(context);
  const auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), error);
  if (error) return {};
  if (results.empty()) {
    error = asio::error::host_not_found;
    return {};
  }
  return results.begin()->endpoint();
}

}  // namespace

struct MetricsServer::Impl {
  ServerState state;  // first: the connections still queued in `context` count in it as it goes
  asio::io_context context{1};
  tcp::acceptor acceptor{context};
  asio::steady_timer retry{context};
  std::thread thread;
  Endpoint bound;  ///< what listening() answers: the address and the kernel's port
  bool warned = false;

  Impl(const Endpoint& endpoint, std::function<std::string()> body, MetricsServerLimits limits)
      : state{std::move(body), limits} {
    listen(endpoint);
    acceptNext();
    thread = std::thread([this] { run(); });
  }

  // Stops the loop and joins it; the connections still open close as `context` drops them.
  ~Impl() {
    context.stop();
    if (thread.joinable()) thread.join();
  }

  void listen(const Endpoint& endpoint) {
    boost::system::error_code error;
    const auto address = resolveListenAddress(context, endpoint, error);
    if (!error) acceptor.open(address.protocol(), error);
    if (!error) acceptor.set_option(tcp::acceptor::reuse_address(true), error);
    if (!error) acceptor.bind(address, error);
    if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (!error) {
      const auto local = acceptor.local_endpoint(error);
      bound = {local.address().to_string(), local.port()};
    }
    if (!error) return;
    throw Error(ErrorCode::InvalidArgument,
                "--metrics: cannot listen on " + endpointText(endpoint) + ": " + error.message() + listenHint(error));
  }

  // What to do about the usual reasons a listen fails, so that the line says it.
  static std::string listenHint(const boost::system::error_code& error) {
    if (error == asio::error::address_in_use) return " (choose another port, or 0 for a free one)";
    if (error == asio::error::access_denied) return " (a port below 1024 needs privileges: choose a higher one)";
    return " (give an address of this machine, 0.0.0.0 for every address, or PORT alone for 127.0.0.1)";
  }

  void run() {
    for (;;) {
      try {
        context.run();
        return;
      } catch (const std::exception& e) {
        spdlog::warn("metrics: {}", e.what());  // one connection's failure; the server goes on
      }
    }
  }

  // More connections than the limit are accepted and closed at once (they would otherwise
  // wait in the kernel's queue, unanswered). An accept that fails (out of descriptors) is
  // tried again a little later rather than at once, which would spin.
  void acceptNext() {
    acceptor.async_accept([this](boost::system::error_code error, tcp::socket socket) {
      if (error == asio::error::operation_aborted) return;
      if (error) {
        if (!std::exchange(warned, true)) spdlog::warn("metrics: accepting a connection failed: {}", error.message());
        retry.expires_after(std::chrono::milliseconds(100));
        retry.async_wait([this](boost::system::error_code timerError) {
          if (!timerError) acceptNext();
        });
        return;
      }
      if (state.open < state.limits.maxConnections) {
        std::make_shared<MetricsConnection>(std::move(socket), state)->readRequest();
      }
      acceptNext();
    });
  }
};

MetricsServer::MetricsServer(const Endpoint& endpoint, std::function<std::string()> body, MetricsServerLimits limits)
    : impl_(std::make_unique<Impl>(endpoint, std::move(body), limits)) {}

MetricsServer::~MetricsServer() = default;

Endpoint MetricsServer::listening() const { return impl_->bound; }

}  // namespace pltrun
