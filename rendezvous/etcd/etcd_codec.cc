#include "rendezvous/etcd/etcd_codec.h"

#include <openssl/evp.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "pltrun/error.h"

namespace pltrun::etcd {

namespace {

using nlohmann::json;

// OpenSSL's block functions take an int length: longer input goes through in pieces, each a
// whole number of base64 quanta (3 bytes, 4 characters).
constexpr size_t kEncodePiece = 3 * 4096;
constexpr size_t kDecodePiece = 4 * 4096;

bool isBase64Digit(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

// The '=' that pad `text`'s last quantum (0 to 2), or none when `text` is not base64: a
// length that is not a multiple of 4, a character outside the alphabet, '=' anywhere but the
// end. Decided here because EVP_DecodeBlock accepts "  Zm9v", "Zg=a", "Z===", "====" and
// "Zg==Zg==" (it skips whitespace at the ends and reads each '=' as zero bits).
std::optional<size_t> paddingOf(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  const size_t digits = text.find_last_not_of('=') + 1;  // npos + 1 == 0: all '='
  const size_t padding = text.size() - digits;
  if (padding > 2) return std::nullopt;
  if (!std::all_of(text.begin(), text.begin() + digits, isBase64Digit)) return std::nullopt;
  return padding;
}

const unsigned char* bytesOf(std::string_view text) { return reinterpret_cast<const unsigned char*>(text.data()); }

[[noreturn]] void malformed(std::string_view what, std::string_view body) {
  constexpr size_t kShown = 200;
  throw Error(ErrorCode::Protocol, "etcd: " + std::string(what) + " in its answer: " +
                                       std::string(body.substr(0, kShown)) + (body.size() > kShown ? "..." : ""));
}

json parseObject(std::string_view body) {
  json parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) malformed("not a JSON object", body);
  return parsed;
}

// int64 fields come as strings ("42"), and are absent at 0.
std::int64_t numberField(const json& object, const char* name) {
  const auto found = object.find(name);
  if (found == object.end()) return 0;
  if (found->is_number_integer()) return found->get<std::int64_t>();
  if (!found->is_string()) throw Error(ErrorCode::Protocol, std::string("etcd: field ") + name + " is not a number");
  try {
    size_t used = 0;
    const std::string& text = found->get_ref<const std::string&>();
    const long long value = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return value;
  } catch (const std::exception&) {
    throw Error(ErrorCode::Protocol, std::string("etcd: field ") + name + " is not a number");
  }
}

std::string bytesField(const json& object, const char* name) {
  const auto found = object.find(name);
  if (found == object.end()) return "";
  std::optional<std::string> bytes = found->is_string() ? base64Decode(found->get<std::string>()) : std::nullopt;
  if (!bytes) throw Error(ErrorCode::Protocol, std::string("etcd: field ") + name + " is not base64");
  return *bytes;
}

KeyValue keyValueOf(const json& entry) {
  KeyValue kv;
  kv.key = bytesField(entry, "key");
  kv.value = bytesField(entry, "value");
  kv.createRevision = numberField(entry, "create_revision");
  kv.modRevision = numberField(entry, "mod_revision");
  kv.version = numberField(entry, "version");
  kv.lease = numberField(entry, "lease");
  return kv;
}

std::vector<KeyValue> keyValues(const json& object) {
  std::vector<KeyValue> result;
  const auto kvs = object.find("kvs");
  if (kvs == object.end()) return result;
  if (!kvs->is_array()) throw Error(ErrorCode::Protocol, "etcd: kvs is not a list");
  for (const json& entry : *kvs) result.push_back(keyValueOf(entry));
  return result;
}

std::int64_t headerRevision(const json& object, std::string_view body) {
  const auto header = object.find("header");
  if (header == object.end() || !header->is_object()) malformed("no header", body);
  return numberField(*header, "revision");
}

json rangeOf(std::string_view key) { return json{{"request_range", {{"key", base64Encode(key)}}}}; }

json putOf(std::string_view key, std::string_view value, std::int64_t lease) {
  json put = {{"key", base64Encode(key)}, {"value", base64Encode(value)}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  return put;
}

json putWithPrevious(std::string_view key, std::string_view value) {
  json put = putOf(key, value, 0);
  put["prev_kv"] = true;
  return put;
}

std::string txnRequest(json compare, std::string_view key, std::string_view value, std::int64_t lease) {
  json request = {{"compare", json::array({std::move(compare)})},
                  {"success", json::array({json{{"request_put", putOf(key, value, lease)}}})},
                  {"failure", json::array({rangeOf(key)})}};
  return request.dump();
}

}  // namespace

std::string base64Encode(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');  // EVP_EncodeBlock ends with a NUL
  size_t written = 0;
  for (size_t at = 0; at < bytes.size(); at += kEncodePiece) {
    const std::string_view piece = bytes.substr(at, kEncodePiece);
    written += EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + written), bytesOf(piece),
                               static_cast<int>(piece.size()));
  }
  out.resize(written);
  return out;
}

std::optional<std::string> base64Decode(std::string_view text) {
  const std::optional<size_t> padding = paddingOf(text);
  if (!padding) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  size_t written = 0;
  for (size_t at = 0; at < text.size(); at += kDecodePiece) {
    const std::string_view piece = text.substr(at, kDecodePiece);
    const int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data() + written), bytesOf(piece),
                                        static_cast<int>(piece.size()));
    if (decoded < 0) return std::nullopt;
    written += static_cast<size_t>(decoded);
  }
  out.resize(written - *padding);  // each '=' decoded as a zero byte
  return out;
}

std::string prefixEnd(std::string_view prefix) {
  std::string end(prefix);
  // The first key after every key with this prefix: the last byte that can grow, grown.
  while (!end.empty() && static_cast<std::uint8_t>(end.back()) == 0xFF) end.pop_back();
  if (end.empty()) return std::string(1, '\0');  // etcd's "every key"
  end.back() = static_cast<char>(static_cast<std::uint8_t>(end.back()) + 1);
  return end;
}

std::string keyRangeRequest(std::string_view key, std::string_view rangeEnd) {
  json request = {{"key", base64Encode(key)}};
  if (!rangeEnd.empty()) request["range_end"] = base64Encode(rangeEnd);
  return request.dump();
}

std::string putRequest(std::string_view key, std::string_view value, std::int64_t lease) {
  return putOf(key, value, lease).dump();
}

std::string createTxnRequest(std::string_view key, std::string_view value, std::int64_t lease) {
  return swapTxnRequest(key, 0, value, lease);
}

std::string swapTxnRequest(std::string_view key, std::int64_t modRevision, std::string_view value, std::int64_t lease) {
  // A key that does not exist has create_revision 0; one that does, its mod_revision.
  json compare = {{"key", base64Encode(key)}, {"result", "EQUAL"}};
  if (modRevision == 0) {
    compare["target"] = "CREATE";
    compare["create_revision"] = "0";
  } else {
    compare["target"] = "MOD";
    compare["mod_revision"] = std::to_string(modRevision);
  }
  return txnRequest(std::move(compare), key, value, lease);
}

std::string storedValue(const KeyValue& kv) {
  return kv.value == kCounterMarker ? std::to_string(kv.version) : kv.value;
}

std::string incrementTxnRequest(std::string_view key) {
  json compare = {
      {"key", base64Encode(key)}, {"result", "EQUAL"}, {"target", "VALUE"}, {"value", base64Encode(kCounterMarker)}};
  json request = {{"compare", json::array({std::move(compare)})},
                  {"success", json::array({json{{"request_put", putWithPrevious(key, kCounterMarker)}}})},
                  {"failure", json::array({rangeOf(key)})}};
  return request.dump();
}

std::string putAllTxnRequest(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  json success = json::array();
  for (size_t index = 0; index < keys.size(); ++index) {
    success.push_back(json{{"request_put", putOf(keys[index], values[index], 0)}});
  }
  return json{{"success", std::move(success)}}.dump();
}

std::string rangeAllTxnRequest(const std::vector<std::string>& keys) {
  json success = json::array();
  for (const std::string& key : keys) success.push_back(rangeOf(key));
  return json{{"success", std::move(success)}}.dump();
}

std::string leaseGrantRequest(std::int64_t ttlSeconds) { return json{{"TTL", std::to_string(ttlSeconds)}}.dump(); }

std::string leaseIdRequest(std::int64_t lease) { return json{{"ID", std::to_string(lease)}}.dump(); }

std::optional<GatewayError> gatewayError(std::string_view body) {
  json parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("code") || parsed.contains("header")) {
    return std::nullopt;
  }
  GatewayError error;
  error.code = static_cast<int>(numberField(parsed, "code"));
  const auto message = parsed.find("message");
  error.message = message != parsed.end() && message->is_string() ? message->get<std::string>() : "";
  return error;
}

std::int64_t parseRevision(std::string_view body) { return headerRevision(parseObject(body), body); }

RangeResult parseRange(std::string_view body) {
  const json parsed = parseObject(body);
  return RangeResult{headerRevision(parsed, body), keyValues(parsed)};
}

TxnResult parseTxn(std::string_view body) {
  const json parsed = parseObject(body);
  TxnResult result;
  result.revision = headerRevision(parsed, body);
  const auto succeeded = parsed.find("succeeded");
  result.succeeded = succeeded != parsed.end() && succeeded->is_boolean() && succeeded->get<bool>();
  const auto responses = parsed.find("responses");
  if (responses != parsed.end() && responses->is_array()) {
    for (const json& response : *responses) {
      const auto range = response.find("response_range");
      if (range != response.end() && range->is_object()) result.kvs = keyValues(*range);
      const auto put = response.find("response_put");
      if (put != response.end() && put->is_object() && put->contains("prev_kv")) {
        result.prevKv = keyValueOf(put->at("prev_kv"));
      }
    }
  }
  return result;
}

RangeAllResult parseRangeAll(std::string_view body, size_t count) {
  const json parsed = parseObject(body);
  RangeAllResult result;
  result.revision = headerRevision(parsed, body);
  const auto responses = parsed.find("responses");
  if (count > 0 && (responses == parsed.end() || !responses->is_array() || responses->size() != count)) {
    malformed("not one answer per key read", body);
  }
  for (size_t index = 0; index < count; ++index) {
    const auto range = responses->at(index).find("response_range");
    if (range == responses->at(index).end() || !range->is_object()) malformed("an answer that is not a read", body);
    std::vector<KeyValue> kvs = keyValues(*range);
    result.kvs.push_back(kvs.empty() ? std::nullopt : std::optional<KeyValue>(std::move(kvs.front())));
  }
  return result;
}

LeaseGrant parseLeaseGrant(std::string_view body) {
  const json parsed = parseObject(body);
  LeaseGrant grant{numberField(parsed, "ID"), numberField(parsed, "TTL")};
  if (grant.id == 0) malformed("no lease ID", body);
  return grant;
}

std::int64_t parseKeepAlive(std::string_view body) {
  // One line of a streamed answer: {"result":{"header":...,"ID":"..","TTL":".."}}.
  const json parsed = parseObject(body.substr(0, body.find('\n')));
  const auto result = parsed.find("result");
  if (result == parsed.end() || !result->is_object()) malformed("no keep-alive result", body);
  return numberField(*result, "TTL");
}

std::string watchCreateRequest(std::string_view key, std::string_view rangeEnd, std::int64_t startRevision,
                               bool deletesOnly) {
  json create = {{"key", base64Encode(key)}, {"prev_kv", true}};
  if (deletesOnly) create["filters"] = json::array({"NOPUT"});
  if (!rangeEnd.empty()) create["range_end"] = base64Encode(rangeEnd);
  if (startRevision != 0) create["start_revision"] = std::to_string(startRevision);
  return json{{"create_request", std::move(create)}}.dump();
}

WatchMessage parseWatchMessage(std::string_view line) {
  const json parsed = parseObject(line);
  if (std::optional<GatewayError> error = gatewayError(line)) malformed("a watch error: " + error->message, line);
  const auto result = parsed.find("result");
  if (result == parsed.end() || !result->is_object()) malformed("no watch result", line);
  WatchMessage message;
  message.created = result->value("created", false);
  message.canceled = result->value("canceled", false);
  message.compactRevision = numberField(*result, "compact_revision");
  if (const auto header = result->find("header"); header != result->end() && header->is_object()) {
    message.revision = numberField(*header, "revision");
  }
  const auto events = result->find("events");
  if (events == result->end()) return message;
  if (!events->is_array()) malformed("events is not a list", line);
  for (const json& entry : *events) {
    WatchEvent event;
    event.deleted = entry.value("type", std::string()) == "DELETE";
    if (const auto kv = entry.find("kv"); kv != entry.end() && kv->is_object()) event.kv = keyValueOf(*kv);
    if (const auto prev = entry.find("prev_kv"); prev != entry.end() && prev->is_object()) {
      event.prevKv = keyValueOf(*prev);
    }
    message.events.push_back(std::move(event));
  }
  return message;
}

}  // namespace pltrun::etcd
