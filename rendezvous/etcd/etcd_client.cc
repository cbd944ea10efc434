#include "rendezvous/etcd/etcd_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

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
};

EtcdClient::EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {
  if (options_.endpoints.empty()) throw Error(ErrorCode::InvalidArgument, "etcd: no endpoint given");
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::callOnce(const std::string& path, const std::string& body) {
  if (!connection_) connection_ = std::make_unique<Connection>(options_.endpoints[current_], options_.timeout);
  std::string answer = connection_->post(path, body, options_.timeout);
  if (std::optional<GatewayError> error = gatewayError(answer)) {
    if (error->code == kUnavailable) throw EndpointFailed{error->message};
    throw Error(ErrorCode::Protocol, "etcd at " + connection_->host + ": " + error->message);
  }
  return answer;
}

std::string EtcdClient::call(const std::string& path, const std::string& body) {
  std::string failures;
  for (size_t tried = 0; tried < options_.endpoints.size(); ++tried) {
    try {
      return callOnce(path, body);
    } catch (const EndpointFailed& failed) {
      failures += (failures.empty() ? "" : "; ") + endpointText(options_.endpoints[current_]) + ": " + failed.reason;
      connection_.reset();
      current_ = (current_ + 1) % options_.endpoints.size();
    }
  }
  throw Error(ErrorCode::Network,
              "etcd: no endpoint answered (" + failures + "); check --rdzv-endpoint and that etcd runs there");
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
