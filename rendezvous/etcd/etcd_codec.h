#pragma once
// etcd v3's JSON gateway (the HTTP/1.1 face of its gRPC API, in every etcd since 3.3), as
// pure functions: the JSON bodies pltrun sends to /v3/kv/*, /v3/lease/* and the answers
// read back. Keys and values travel base64-encoded; 64-bit numbers travel as JSON strings;
// a field at its zero value (count 0, succeeded false, no kvs) is left out of an answer.
// No I/O here: etcd_client.cc sends and receives.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pltrun::etcd {

std::string base64Encode(std::string_view bytes);
/// Empty when `text` is not base64.
std::optional<std::string> base64Decode(std::string_view text);

/// The range_end that makes a range request cover every key starting with `prefix`.
std::string prefixEnd(std::string_view prefix);

struct KeyValue {
  std::string key;
  std::string value;
  std::int64_t createRevision = 0;
  std::int64_t modRevision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;  ///< 0: the key lives until deleted
};

struct RangeResult {
  std::int64_t revision = 0;  ///< the store's revision when it answered
  std::vector<KeyValue> kvs;
};

struct TxnResult {
  std::int64_t revision = 0;
  bool succeeded = false;
  std::vector<KeyValue> kvs;       ///< what the branch's range request read (the failure branch reads the key)
  std::optional<KeyValue> prevKv;  ///< what the branch's put replaced, where it asked (incrementTxnRequest)
};

/// The answer to a read of several keys at once: each key's entry (none: missing), in order.
struct RangeAllResult {
  std::int64_t revision = 0;
  std::vector<std::optional<KeyValue>> kvs;
};

/// The most operations etcd takes in one transaction (its --max-txn-ops, 128 by default).
constexpr size_t kMaxTxnOps = 128;

/// What etcd holds at a counter that only increments have written. Its count is the key's
/// version: an increment puts this same value again, which no other writer's put can make
/// fail, so hundreds of agents taking slots at once cost one raft entry each instead of a
/// compare-and-set race on one key. A NUL first: no value pltrun or torch writes.
inline const std::string kCounterMarker{"\0pltrun counter", 15};

/// What `kv` holds as a Store reads it: a counter's count in decimal, else the value.
std::string storedValue(const KeyValue& kv);

struct LeaseGrant {
  std::int64_t id = 0;
  std::int64_t ttlSeconds = 0;  ///< as granted: etcd may raise a TTL below its minimum
};

/// One change a watch reports: a put (kv is the new value) or a delete (kv holds the key and
/// the revision of the delete; prevKv what was deleted).
struct WatchEvent {
  bool deleted = false;
  KeyValue kv;
  std::optional<KeyValue> prevKv;
};

/// One message of a watch stream.
struct WatchMessage {
  std::int64_t revision = 0;  ///< the store's revision when it was sent
  bool created = false;       ///< etcd's answer to one create request: that watch runs from here
  bool canceled = false;      ///< the watch ended (e.g. its start revision was compacted)
  std::int64_t compactRevision = 0;
  std::vector<WatchEvent> events;
};

/// What the gateway answers instead of a result: a gRPC status code and its message.
struct GatewayError {
  int code = 0;  ///< 14 (Unavailable): no leader, or the member cannot reach one
  std::string message;
};
constexpr int kUnavailable = 14;
constexpr int kNotFound = 5;
constexpr int kUnauthenticated = 16;  ///< e.g. an auth token that lapsed

// Requests.
/// The body of a range or a delete-range request (both are a key and an optional end).
std::string keyRangeRequest(std::string_view key, std::string_view rangeEnd = {});
std::string putRequest(std::string_view key, std::string_view value, std::int64_t lease = 0);
/// Puts `value` at `key` only if the key does not exist; otherwise reads it.
std::string createTxnRequest(std::string_view key, std::string_view value, std::int64_t lease = 0);
/// Puts `value` at `key` only if the key was last modified at `modRevision` (0: does not
/// exist); otherwise reads it. Compare-and-set without a race.
std::string swapTxnRequest(std::string_view key, std::int64_t modRevision, std::string_view value,
                           std::int64_t lease = 0);
/// Puts kCounterMarker at `key` if it holds it already (the answer's prevKv is the entry
/// before, whose version + 1 is the count now); otherwise reads the key.
std::string incrementTxnRequest(std::string_view key);
/// Puts every key (at most kMaxTxnOps) in one transaction.
std::string putAllTxnRequest(const std::vector<std::string>& keys, const std::vector<std::string>& values);
/// Reads every key (at most kMaxTxnOps) in one transaction: a read, no raft entry.
std::string rangeAllTxnRequest(const std::vector<std::string>& keys);
std::string leaseGrantRequest(std::int64_t ttlSeconds);
std::string leaseIdRequest(std::int64_t lease);
/// Opens a watch of [key, rangeEnd) (a single key when rangeEnd is empty) from
/// `startRevision` (0: from now), asking for each deleted value too; `deletesOnly`: etcd
/// sends no PUT events (its NOPUT filter).
std::string watchCreateRequest(std::string_view key, std::string_view rangeEnd, std::int64_t startRevision,
                               bool deletesOnly = false);

// Answers. Each throws Error(Protocol) naming what is wrong when `body` is not that answer.
std::optional<GatewayError> gatewayError(std::string_view body);
std::int64_t parseRevision(std::string_view body);  ///< put and delete answers: the new revision
RangeResult parseRange(std::string_view body);
TxnResult parseTxn(std::string_view body);
/// The answer to rangeAllTxnRequest for `count` keys.
RangeAllResult parseRangeAll(std::string_view body, size_t count);
LeaseGrant parseLeaseGrant(std::string_view body);
/// A keep-alive answer: the lease's remaining TTL in seconds; 0 when it has expired.
std::int64_t parseKeepAlive(std::string_view body);
/// One line of a watch stream: {"result":{"header":..,"created":true}} or {"result":{..,"events":[..]}}.
WatchMessage parseWatchMessage(std::string_view line);

}  // namespace pltrun::etcd
