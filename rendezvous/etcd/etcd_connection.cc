#include "rendezvous/etcd/etcd_connection.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/system/system_error.hpp>
#include <optional>

#include "pltrun/error.h"
#include "rendezvous/etcd/etcd_tls.h"

namespace pltrun::etcd {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A process out of descriptors fails alike on every endpoint, so it is said at once, with
// what to do, rather than as one endpoint's failure (asio's connect to a list of addresses
// even reports a socket it could not open as "Operation canceled").
void throwIfOutOfDescriptors(const boost::system::error_code& error, const std::string& host) {
  if (error != asio::error::no_descriptors) return;
  throw Error(ErrorCode::Network, "etcd: cannot open a connection to " + host + ": " + error.message() +
                                      ": this process reached its open-file limit (raise it with ulimit -n)");
}

}  // namespace

struct EtcdConnection::Impl {
  Impl(const Endpoint& endpoint, const EtcdClientOptions& given, asio::ssl::context* tlsContext,
       std::chrono::milliseconds timeout)
      : options(given), host(endpointText(endpoint)) {  // host is also the Host header, IPv6 in brackets
    if (tlsContext) {
      secure.emplace(context, *tlsContext);
    } else {
      plain.emplace(context);
    }
    tcp::resolver resolver(context);
    boost::system::error_code error;
    const auto addresses = resolver.resolve(endpoint.host, std::to_string(endpoint.port), error);
    throwIfOutOfDescriptors(error, host);
    if (error) throw EndpointFailed{"cannot resolve " + endpoint.host + ": " + error.message()};
    connect(addresses, timeout);
    if (secure) handshake(endpoint.host, timeout);
  }

  // Tries each address in turn within `timeout` in all, opening each socket here so that a
  // failed open is reported as what it is.
  void connect(const tcp::resolver::results_type& addresses, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    boost::system::error_code error = asio::error::timed_out;  // when no address is left time
    for (const auto& address : addresses) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      boost::system::error_code ignored;
      lowest().socket().close(ignored);
      lowest().socket().open(address.endpoint().protocol(), error);
      throwIfOutOfDescriptors(error, host);
      if (error) continue;
      lowest().expires_after(left);
      lowest().async_connect(address.endpoint(), [&](boost::system::error_code e) { error = e; });
      runFor(left, "connecting");
      if (!error) return;
    }
    throw EndpointFailed{error.message()};
  }

  void handshake(const std::string& name, std::chrono::milliseconds timeout) {
    boost::system::error_code error;
    asio::ip::make_address(name, error);
    if (error) SSL_set_tlsext_host_name(secure->native_handle(), name.c_str());  // SNI carries names only
    secure->set_verify_callback(asio::ssl::host_name_verification(name));
    lowest().expires_after(timeout);
    secure->async_handshake(asio::ssl::stream_base::client, [&](boost::system::error_code e) { error = e; });
    runFor(timeout, "in the TLS handshake");
    // A plain HTTP member hangs up on the TLS hello, or answers it with an HTTP error.
    const bool hungUp = error == asio::error::connection_reset || error == asio::error::eof ||
                        error == asio::ssl::error::stream_truncated;
    if (hungUp) throw EndpointFailed{"TLS handshake failed: " + error.message() + " (" + kServesNoHttps + ")"};
    if (error) throw EndpointFailed{"TLS handshake failed: " + failure(error)};
  }

  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }

  // Runs `operation` on the stream in use: TLS or plain.
  template <typename Operation>
  void onStream(Operation operation) {
    if (secure) {
      operation(*secure);
    } else {
      operation(*plain);
    }
  }

  http::request<http::string_body> request(const std::string& path, const std::string& body, bool keepAlive) const {
    http::request<http::string_body> request{http::verb::post, path, 11};
    request.set(http::field::host, host);
    if (!token.empty()) request.set(http::field::authorization, token);
    request.set(http::field::content_type, "application/json");
    request.keep_alive(keepAlive);
    request.body() = body;
    request.prepare_payload();
    return request;
  }

  std::string post(const std::string& path, const std::string& body, std::chrono::milliseconds timeout) {
    auto message = request(path, body, true);
    boost::system::error_code error;
    http::response<http::string_body> response;
    lowest().expires_after(timeout);
    onStream([&](auto& stream) {
      http::async_write(stream, message, [&, s = &stream](boost::system::error_code e, size_t) {
        if (e) {
          error = e;
          return;
        }
        http::async_read(*s, buffer, response, [&](boost::system::error_code r, size_t) { error = r; });
      });
    });
    runFor(timeout, "waiting for its answer");
    if (error) throw EndpointFailed{failure(error)};
    if (response.result() == http::status::not_found) {
      throw Error(ErrorCode::Protocol, "etcd at " + host + " has no " + path + ": it is not etcd v3.3 or later");
    }
    return std::move(response.body());
  }

  bool postStreaming(const std::string& path, const std::string& body, std::chrono::milliseconds timeout,
                     const std::function<bool(std::string_view)>& onLine, const StreamPacing& pacing) {
    auto message = request(path, body, true);
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);  // a watch's answer grows for as long as it runs
    boost::system::error_code error;
    bool done = false;
    size_t consumed = 0;
    // Hands the complete lines read so far to onLine; true once it has had what it wanted.
    auto takeLines = [&] {
      const std::string& text = parser.get().body();
      for (size_t newline = text.find('\n', consumed); newline != std::string::npos;
           newline = text.find('\n', consumed)) {
        const std::string_view line = std::string_view(text).substr(consumed, newline - consumed);
        consumed = newline + 1;
        if (!line.empty() && onLine(line)) return true;
      }
      return false;
    };
    onStream([&](auto& stream) {
      std::function<void()> readMore = [&] {
        http::async_read_some(stream, buffer, parser, [&](boost::system::error_code e, size_t) {
          if (e) {
            error = e;
          } else if (takeLines()) {
            done = true;
          } else if (parser.is_done()) {
            error = http::error::end_of_stream;
          } else {
            readMore();
          }
        });
      };
      lowest().expires_after(timeout);
      http::async_write(stream, message, [&](boost::system::error_code e, size_t) {
        if (e) {
          error = e;
          return;
        }
        readMore();
      });
      runPaced(timeout + std::chrono::milliseconds(100), pacing);
    });
    if (done) return true;
    if (error == beast::error::timeout || !context.stopped()) return false;
    throw EndpointFailed{"the watch broke: " + failure(error)};
  }

  // The error in words, with its likely cause: over TLS, a refused client certificate
  // shows only on the first read; a member that serves only https cuts a plain request off.
  std::string failure(const boost::system::error_code& error) const {
    if (secure) {
      const std::string cause = tlsFailureCause(error.message(), options);
      return error.message() + (cause.empty() ? "" : " (" + cause + ")");
    }
    const bool cutOff =
        error == http::error::end_of_stream || error == asio::error::connection_reset || error == asio::error::eof;
    return error.message() + (cutOff ? " (if the member serves https, use --rdzv-conf protocol=https)" : "");
  }

  // Runs the stream's handlers for at most `timeout`, a slice at a time with the pacing's
  // `between` after each. When `between` throws, the stream is closed and its handlers
  // drained (they refer to the caller's locals) before the exception goes on.
  void runPaced(std::chrono::milliseconds timeout, const StreamPacing& pacing) {
    context.restart();
    if (!pacing.between || pacing.slice.count() <= 0) {
      context.run_for(timeout);
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!context.stopped() && std::chrono::steady_clock::now() < deadline) {
      context.run_for(std::min(
          pacing.slice, std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())));
      if (context.stopped()) return;
      try {
        pacing.between();
      } catch (...) {
        lowest().close();
        context.run_for(std::chrono::milliseconds(100));
        throw;
      }
    }
  }

  void runFor(std::chrono::milliseconds timeout, const char* doing) {
    context.restart();
    // The stream's own expiry ends the operation; run_for is the backstop.
    context.run_for(timeout + std::chrono::milliseconds(100));
    if (!context.stopped())
      throw EndpointFailed{std::string("no answer after ") + std::to_string(timeout.count()) + " ms " + doing};
  }

  const EtcdClientOptions& options;  // the client's, which outlives its connections
  asio::io_context context;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;
  const std::string host;
  std::string token;  ///< sent as Authorization when not empty
};

EtcdConnection::EtcdConnection(const Endpoint& endpoint, const EtcdClientOptions& options,
                               boost::asio::ssl::context* tls, std::chrono::milliseconds timeout) {
  try {
    impl_ = std::make_unique<Impl>(endpoint, options, tls, timeout);
  } catch (const boost::system::system_error& failed) {  // e.g. the io_context's own descriptors
    throwIfOutOfDescriptors(failed.code(), endpointText(endpoint));
    throw EndpointFailed{failed.code().message()};
  }
}

EtcdConnection::~EtcdConnection() = default;

std::string EtcdConnection::post(const std::string& path, const std::string& body, std::chrono::milliseconds timeout) {
  return impl_->post(path, body, timeout);
}

bool EtcdConnection::postStreaming(const std::string& path, const std::string& body, std::chrono::milliseconds timeout,
                                   const std::function<bool(std::string_view)>& onLine, const StreamPacing& pacing) {
  return impl_->postStreaming(path, body, timeout, onLine, pacing);
}

void EtcdConnection::setToken(std::string token) { impl_->token = std::move(token); }

const std::string& EtcdConnection::host() const { return impl_->host; }

}  // namespace pltrun::etcd
