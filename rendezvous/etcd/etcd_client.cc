#include "rendezvous/etcd/etcd_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "pltrun/error.h"
#include "rendezvous/store/host_port_text.h"

namespace pltrun::etcd {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// What went wrong on one endpoint, worth trying the next for.
struct EndpointFailed {
  std::string reason;
};

[[noreturn]] void throwNoEndpointAnswered(const std::string& failures) {
  throw Error(ErrorCode::Network,
              "etcd: no endpoint answered (" + failures + "); check --rdzv-endpoint and that etcd runs there");
}

}  // namespace

// One keep-alive HTTP/1.1 connection to one member. Every step runs asynchronously on a
// private io_context for at most the request's timeout, so a member that stops answering
// (SIGSTOP, a dead link) costs one timeout, never a hang.
struct EtcdClient::Connection {
  Connection(const EtcdEndpoint& endpoint, std::chrono::milliseconds timeout) : stream(context) {
    tcp::resolver resolver(context);
    boost::system::error_code error;
    const auto addresses = resolver.resolve(endpoint.host, std::to_string(endpoint.port), error);
    if (error) throw EndpointFailed{"cannot resolve " + endpoint.host + ": " + error.message()};
    stream.expires_after(timeout);
    stream.async_connect(addresses, [&](boost::system::error_code e, const tcp::endpoint&) { error = e; });
    runFor(timeout, "connecting");
    if (error) throw EndpointFailed{error.message()};
    host = endpointText(endpoint);  // also the Host header, which wants an IPv6 address in brackets
  }

  std::string post(const std::string& path, const std::string& body, std::chrono::milliseconds timeout) {
    http::request<http::string_body> request{http::verb::post, path, 11};
    request.set(http::field::host, host);
    if (!token.empty()) request.set(http::field::authorization, token);
    request.set(http::field::content_type, "application/json");
    request.keep_alive(true);
    request.body() = body;
    request.prepare_payload();
    boost::system::error_code error;
    http::response<http::string_body> response;
    stream.expires_after(timeout);
    http::async_write(stream, request, [&](boost::system::error_code e, size_t) {
      if (e) {
        error = e;
        return;
      }
      http::async_read(stream, buffer, response, [&](boost::system::error_code r, size_t) { error = r; });
    });
    runFor(timeout, "waiting for its answer");
    if (error) throw EndpointFailed{error.message()};
    if (response.result() == http::status::not_found) {
      throw Error(ErrorCode::Protocol, "etcd at " + host + " has no " + path + ": it is not etcd v3.3 or later");
    }
    return std::move(response.body());
  }

  // POSTs to a streaming endpoint (/v3/watch) and hands each line of the answer to `onLine`
  // until it returns true (then true), or `timeout` passes (then false). The connection
  // cannot serve anything else afterwards.
  bool postStreaming(const std::string& path, const std::string& body, std::chrono::milliseconds timeout,
                     const std::function<bool(std::string_view)>& onLine) {
    http::request<http::string_body> request{http::verb::post, path, 11};
    request.set(http::field::host, host);
    if (!token.empty()) request.set(http::field::authorization, token);
    request.set(http::field::content_type, "application/json");
    request.body() = body;
    request.prepare_payload();
    http::response_parser<http::string_body> parser;
    parser.body_limit(boost::none);
    boost::system::error_code error;
    bool done = false;
    size_t consumed = 0;
    std::function<void()> readMore = [&] {
      http::async_read_some(stream, buffer, parser, [&](boost::system::error_code e, size_t) {
        if (e) {
          error = e;
          return;
        }
        const std::string& text = parser.get().body();
        for (size_t newline = text.find('\n', consumed); newline != std::string::npos;
             newline = text.find('\n', consumed)) {
          const std::string_view line = std::string_view(text).substr(consumed, newline - consumed);
          consumed = newline + 1;
          if (!line.empty() && onLine(line)) {
            done = true;
            return;
          }
        }
        if (parser.is_done()) {
          error = http::error::end_of_stream;
          return;
        }
        readMore();
      });
    };
    stream.expires_after(timeout);
    http::async_write(stream, request, [&](boost::system::error_code e, size_t) {
      if (e) {
        error = e;
        return;
      }
      readMore();
    });
    context.restart();
    context.run_for(timeout + std::chrono::milliseconds(100));
    if (done) return true;
    if (error == beast::error::timeout || !context.stopped()) return false;
    throw EndpointFailed{"the watch broke: " + error.message()};
  }

  void runFor(std::chrono::milliseconds timeout, const char* doing) {
    context.restart();
    // The stream's own expiry ends the operation; run_for is the backstop.
    context.run_for(timeout + std::chrono::milliseconds(100));
    if (!context.stopped())
      throw EndpointFailed{std::string("no answer after ") + std::to_string(timeout.count()) + " ms " + doing};
  }

  asio::io_context context;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  std::string host;
  std::string token;  ///< sent as Authorization when not empty
};

EtcdClient::EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {
  if (options_.endpoints.empty()) throw Error(ErrorCode::InvalidArgument, "etcd: no endpoint given");
  if (options_.https) {
    throw Error(ErrorCode::InvalidArgument,
                "--rdzv-conf protocol=https: pltrun cannot speak TLS to etcd yet; reach etcd over http on a trusted "
                "network (or through a local TLS proxy), with user and password_file");
  }
}

// etcd's authentication: the user's token, sent with every request on every connection.
void EtcdClient::authenticate() {
  const std::string answer = connection_->post(
      "/v3/auth/authenticate", nlohmann::json{{"name", options_.user}, {"password", options_.password}}.dump(),
      options_.timeout);
  if (std::optional<GatewayError> error = gatewayError(answer)) {
    if (error->code == kUnavailable) throw EndpointFailed{error->message};
    throw Error(ErrorCode::PermissionDenied, "etcd at " + connection_->host + " refused user '" + options_.user +
                                                 "': " + error->message + "; check --rdzv-conf user and password_file");
  }
  const nlohmann::json parsed = nlohmann::json::parse(answer, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("token") || !parsed["token"].is_string()) {
    throw Error(ErrorCode::Protocol, "etcd at " + connection_->host + " answered authentication without a token");
  }
  token_ = parsed["token"].get<std::string>();
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::callOnce(const std::string& path, const std::string& body) {
  if (!connection_) connection_ = std::make_unique<Connection>(options_.endpoints[current_], options_.timeout);
  if (!options_.user.empty() && token_.empty()) authenticate();
  connection_->token = token_;
  std::string answer = connection_->post(path, body, options_.timeout);
  if (std::optional<GatewayError> error = gatewayError(answer)) {
    if (error->code == kUnavailable) throw EndpointFailed{error->message};
    if (error->code == kUnauthenticated && !token_.empty()) {  // the token lapsed: once more with a new one
      token_.clear();
      return callOnce(path, body);
    }
    throw Error(ErrorCode::Protocol, "etcd at " + connection_->host + ": " + error->message);
  }
  return answer;
}

WatchMessage EtcdClient::watch(const std::string& key, const std::string& rangeEnd, std::int64_t startRevision,
                               std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string body = watchCreateRequest(key, rangeEnd, startRevision);
  std::string failures;
  for (size_t tried = 0; tried < options_.endpoints.size(); ++tried) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return WatchMessage{};
    try {
      // A connection of its own: the stream holds it until it is closed.
      Connection connection(options_.endpoints[current_], std::min(left, options_.timeout));
      connection.token = token_;
      WatchMessage message;
      connection.postStreaming("/v3/watch", body, left, [&](std::string_view line) {
        try {
          message = parseWatchMessage(line);
        } catch (const Error& error) {
          throw EndpointFailed{error.what()};  // e.g. {"error":..} from a member without a leader
        }
        return message.canceled || !message.events.empty();
      });
      return message;  // empty when nothing changed in time
    } catch (const EndpointFailed& failed) {
      moveToNextEndpoint(failures, failed.reason);
    }
  }
  throwNoEndpointAnswered(failures);
}

// Notes why the current endpoint failed, and goes on with the next.
void EtcdClient::moveToNextEndpoint(std::string& failures, const std::string& reason) {
  failures += (failures.empty() ? "" : "; ") + endpointText(options_.endpoints[current_]) + ": " + reason;
  connection_.reset();
  current_ = (current_ + 1) % options_.endpoints.size();
}

RangeResult EtcdClient::range(const std::string& key) { return parseRange(call("/v3/kv/range", keyRangeRequest(key))); }

std::string EtcdClient::call(const std::string& path, const std::string& body) {
  std::string failures;
  for (size_t tried = 0; tried < options_.endpoints.size(); ++tried) {
    try {
      return callOnce(path, body);
    } catch (const EndpointFailed& failed) {
      moveToNextEndpoint(failures, failed.reason);
    }
  }
  throwNoEndpointAnswered(failures);
}

std::optional<KeyValue> EtcdClient::get(const std::string& key) {
  RangeResult result = parseRange(call("/v3/kv/range", keyRangeRequest(key)));
  if (result.kvs.empty()) return std::nullopt;
  return std::move(result.kvs.front());
}

RangeResult EtcdClient::getPrefix(const std::string& prefix) {
  return parseRange(call("/v3/kv/range", keyRangeRequest(prefix, prefixEnd(prefix))));
}

std::int64_t EtcdClient::put(const std::string& key, const std::string& value, std::int64_t lease) {
  return parseRevision(call("/v3/kv/put", putRequest(key, value, lease)));
}

TxnResult EtcdClient::create(const std::string& key, const std::string& value, std::int64_t lease) {
  return parseTxn(call("/v3/kv/txn", createTxnRequest(key, value, lease)));
}

TxnResult EtcdClient::swap(const std::string& key, std::int64_t modRevision, const std::string& value,
                           std::int64_t lease) {
  return parseTxn(call("/v3/kv/txn", swapTxnRequest(key, modRevision, value, lease)));
}

std::int64_t EtcdClient::erase(const std::string& key) {
  return parseRevision(call("/v3/kv/deleterange", keyRangeRequest(key)));
}

std::int64_t EtcdClient::erasePrefix(const std::string& prefix) {
  return parseRevision(call("/v3/kv/deleterange", keyRangeRequest(prefix, prefixEnd(prefix))));
}

LeaseGrant EtcdClient::grantLease(std::int64_t ttlSeconds) {
  return parseLeaseGrant(call("/v3/lease/grant", leaseGrantRequest(ttlSeconds)));
}

std::int64_t EtcdClient::keepAlive(std::int64_t lease) {
  return parseKeepAlive(call("/v3/lease/keepalive", leaseIdRequest(lease)));
}

void EtcdClient::revokeLease(std::int64_t lease) { call("/v3/lease/revoke", leaseIdRequest(lease)); }

std::string EtcdClient::currentEndpoint() const { return endpointText(options_.endpoints[current_]); }

std::string endpointText(const EtcdEndpoint& endpoint) { return rdzv::hostPortText(endpoint.host, endpoint.port); }

}  // namespace pltrun::etcd
