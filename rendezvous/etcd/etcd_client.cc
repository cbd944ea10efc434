#include "rendezvous/etcd/etcd_client.h"

#include <algorithm>
#include <boost/asio/ssl/context.hpp>
#include <nlohmann/json.hpp>

#include "base/host_port_text.h"
#include "pltrun/error.h"
#include "rendezvous/etcd/etcd_connection.h"
#include "rendezvous/etcd/etcd_tls.h"

namespace pltrun::etcd {

namespace {

[[noreturn]] void throwNoEndpointAnswered(const std::string& failures) {
  throw Error(ErrorCode::Network,
              "etcd: no endpoint answered (" + failures + "); check --rdzv-endpoint and that etcd runs there");
}

}  // namespace

EtcdClient::EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {
  if (options_.endpoints.empty()) throw Error(ErrorCode::InvalidArgument, "etcd: no endpoint given");
  if (options_.https) tls_ = std::make_unique<boost::asio::ssl::context>(tlsContext(options_));
}

// etcd's authentication: the user's token, sent with every request on every connection.
void EtcdClient::authenticate() {
  connection_->setToken("");  // a lapsed one would be refused
  const std::string answer = connection_->post(
      "/v3/auth/authenticate", nlohmann::json{{"name", options_.user}, {"password", options_.password}}.dump(),
      options_.timeout);
  if (std::optional<GatewayError> error = gatewayError(answer)) {
    if (error->code == kUnavailable) throw EndpointFailed{error->message};
    throw Error(ErrorCode::PermissionDenied, "etcd at " + connection_->host() + " refused user '" + options_.user +
                                                 "': " + error->message + "; check --rdzv-conf user and password_file");
  }
  const nlohmann::json parsed = nlohmann::json::parse(answer, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("token") || !parsed["token"].is_string()) {
    throw Error(ErrorCode::Protocol, "etcd at " + connection_->host() + " answered authentication without a token");
  }
  token_ = parsed["token"].get<std::string>();
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::callOnce(const std::string& path, const std::string& body) {
  if (!connection_) {
    connection_ =
        std::make_unique<EtcdConnection>(options_.endpoints[current_], options_, tls_.get(), options_.timeout);
  }
  if (!options_.user.empty() && token_.empty()) authenticate();
  connection_->setToken(token_);
  std::string answer = connection_->post(path, body, options_.timeout);
  if (std::optional<GatewayError> error = gatewayError(answer)) {
    if (error->code == kUnavailable) throw EndpointFailed{error->message};
    if (error->code == kUnauthenticated && !token_.empty()) {  // the token lapsed: once more with a new one
      token_.clear();
      return callOnce(path, body);
    }
    throw Error(ErrorCode::Protocol, "etcd at " + connection_->host() + ": " + error->message);
  }
  return answer;
}

WatchMessage EtcdClient::watch(const std::string& key, const std::string& rangeEnd, std::int64_t startRevision,
                               std::chrono::milliseconds timeout) {
  return watchStream(watchCreateRequest(key, rangeEnd, startRevision), timeout, {});
}

WatchMessage EtcdClient::watchDeletes(const std::string& key, const std::string& rangeEnd, std::int64_t startRevision,
                                      std::chrono::milliseconds timeout, const StreamPacing& pacing) {
  return watchStream(watchCreateRequest(key, rangeEnd, startRevision, true), timeout, pacing);
}

// etcd's JSON gateway reads one create request after another from the body, so one
// stream (one connection) carries a watch of every key.
WatchMessage EtcdClient::watchKeys(const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
                                   const StreamPacing& pacing, const std::function<bool()>& whenWatching) {
  std::string body;
  for (const std::string& key : keys) body += watchCreateRequest(key, "", 0);
  return watchStream(body, timeout, pacing, keys.size(), whenWatching);
}

WatchMessage EtcdClient::watchStream(const std::string& body, std::chrono::milliseconds timeout,
                                     const StreamPacing& pacing, size_t watches,
                                     const std::function<bool()>& whenWatching) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string failures;
  for (size_t tried = 0; tried < options_.endpoints.size(); ++tried) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return WatchMessage{};
    try {
      // A connection of its own: the stream holds it until it is closed.
      EtcdConnection connection(options_.endpoints[current_], options_, tls_.get(), std::min(left, options_.timeout));
      connection.setToken(token_);
      WatchMessage message;
      size_t created = 0;
      connection.postStreaming(
          "/v3/watch", body, left,
          [&](std::string_view line) {
            try {
              message = parseWatchMessage(line);
            } catch (const Error& error) {
              throw EndpointFailed{error.what()};  // e.g. {"error":..} from a member without a leader
            }
            if (message.created && ++created == watches && whenWatching && whenWatching()) return true;
            return message.canceled || !message.events.empty();
          },
          pacing);
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

TxnResult EtcdClient::increment(const std::string& key) {
  return parseTxn(call("/v3/kv/txn", incrementTxnRequest(key)));
}

void EtcdClient::putAll(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  for (size_t first = 0; first < keys.size(); first += kMaxTxnOps) {
    const size_t last = std::min(keys.size(), first + kMaxTxnOps);
    const std::vector<std::string> someKeys(keys.begin() + first, keys.begin() + last);
    const std::vector<std::string> someValues(values.begin() + first, values.begin() + last);
    parseTxn(call("/v3/kv/txn", putAllTxnRequest(someKeys, someValues)));
  }
}

RangeAllResult EtcdClient::rangeAll(const std::vector<std::string>& keys) {
  RangeAllResult all;
  for (size_t first = 0; first < keys.size(); first += kMaxTxnOps) {
    const std::vector<std::string> some(keys.begin() + first, keys.begin() + std::min(keys.size(), first + kMaxTxnOps));
    RangeAllResult read = parseRangeAll(call("/v3/kv/txn", rangeAllTxnRequest(some)), some.size());
    all.revision = first == 0 ? read.revision : std::min(all.revision, read.revision);
    for (auto& kv : read.kvs) all.kvs.push_back(std::move(kv));
  }
  return all;
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

}  // namespace pltrun::etcd
