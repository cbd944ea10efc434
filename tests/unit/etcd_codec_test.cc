// etcd v3 JSON gateway codec (rendezvous/etcd/etcd_codec.h): base64 (RFC 4648's vectors and
// what is not base64), prefix range ends, the request bodies, and answers as etcd 3.4 writes
// them (zero-valued fields left out, 64-bit numbers as strings), malformed ones included.

#include "rendezvous/etcd/etcd_codec.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "pltrun/error.h"

using namespace pltrun;
using namespace pltrun::etcd;
using nlohmann::json;

TEST_CASE("etcd codec: base64 both ways, and what is not base64", "[etcd_codec]") {
  const std::vector<std::pair<std::string, std::string>> vectors = {{"", ""},
                                                                    {"f", "Zg=="},
                                                                    {"fo", "Zm8="},
                                                                    {"foo", "Zm9v"},
                                                                    {"foob", "Zm9vYg=="},
                                                                    {"fooba", "Zm9vYmE="},
                                                                    {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    CHECK(base64Encode(plain) == encoded);
    CHECK(base64Decode(encoded) == plain);
  }
  std::string every;
  for (int byte = 0; byte < 256; ++byte) every += static_cast<char>(byte);
  CHECK(base64Decode(base64Encode(every)) == every);
  for (const char* bad : {"Zm9", "Zm9v!", "Z===", "Zg=a", "Zg==Zg==", "Zm 9v"}) {
    INFO(bad);
    CHECK_FALSE(base64Decode(bad).has_value());
  }
}

TEST_CASE("etcd codec: base64 through libcrypto refuses what EVP_DecodeBlock would let through",
          "[etcd_codec][base64]") {
  // EVP_DecodeBlock skips whitespace at the ends, reads each '=' as a zero byte and accepts
  // '=' in the middle: none of that is base64 to etcd.
  for (const char* bad : {"  Zm9v", "Zm9v  ", "Zm9v\n", "====", "Zg==Zg==", "Zm9v====", "Zm9\xff"}) {
    INFO(bad);
    CHECK_FALSE(base64Decode(bad).has_value());
  }
  CHECK_FALSE(base64Decode(std::string("Zg=\0", 4)).has_value());
  // The padding is counted off what it decodes: no zero bytes at the end.
  CHECK(base64Decode("AA==") == std::string(1, '\0'));
  CHECK(base64Decode("AAA=") == std::string(2, '\0'));
  CHECK(base64Decode("AAAA") == std::string(3, '\0'));
  CHECK(base64Decode("+/+/") == std::string("\xfb\xff\xbf", 3));
  CHECK(base64Encode(std::string("\xfb\xff\xbf", 3)) == "+/+/");
}

TEST_CASE("etcd codec: base64 round trips of every length, across OpenSSL's int-sized pieces", "[etcd_codec][base64]") {
  std::string bytes;
  for (size_t length : {0, 1, 2, 3, 4, 5, 12287, 12288, 12289, 12290, 16384, 40000}) {
    bytes.resize(length);
    for (size_t at = 0; at < length; ++at) bytes[at] = static_cast<char>((at * 131 + length) % 256);
    const std::string encoded = base64Encode(bytes);
    INFO(length);
    CHECK(encoded.size() == (length + 2) / 3 * 4);
    CHECK(encoded.find('\0') == std::string::npos);
    CHECK(base64Decode(encoded) == bytes);
  }
}

TEST_CASE("etcd codec: a prefix's range end is the first key after every key with it", "[etcd_codec]") {
  CHECK(prefixEnd("/pltrun/") == "/pltrun0");
  CHECK(prefixEnd("a") == "b");
  CHECK(prefixEnd(std::string("a\xff", 2)) == "b");
  CHECK(prefixEnd("") == std::string(1, '\0'));
}

TEST_CASE("etcd codec: requests carry base64 keys and values and int64s as strings", "[etcd_codec]") {
  CHECK(json::parse(keyRangeRequest("foo")) == json{{"key", "Zm9v"}});
  CHECK(json::parse(keyRangeRequest("foo", "fop")) == json{{"key", "Zm9v"}, {"range_end", "Zm9w"}});
  CHECK(json::parse(putRequest("foo", "bar", 7)) == json{{"key", "Zm9v"}, {"value", "YmFy"}, {"lease", "7"}});
  CHECK(json::parse(putRequest("foo", "bar")) == json{{"key", "Zm9v"}, {"value", "YmFy"}});
  const json create = json::parse(createTxnRequest("foo", "bar"));
  CHECK(create["compare"][0] ==
        json{{"key", "Zm9v"}, {"result", "EQUAL"}, {"target", "CREATE"}, {"create_revision", "0"}});
  CHECK(create["success"][0]["request_put"]["value"] == "YmFy");
  CHECK(create["failure"][0]["request_range"]["key"] == "Zm9v");
  const json swap = json::parse(swapTxnRequest("foo", 42, "baz", 9));
  CHECK(swap["compare"][0]["target"] == "MOD");
  CHECK(swap["compare"][0]["mod_revision"] == "42");
  CHECK(swap["success"][0]["request_put"]["lease"] == "9");
  CHECK(json::parse(leaseGrantRequest(5)) == json{{"TTL", "5"}});
  CHECK(json::parse(leaseIdRequest(123)) == json{{"ID", "123"}});
}

TEST_CASE("etcd codec: answers as etcd 3.4 writes them", "[etcd_codec]") {
  const std::string header = R"("header":{"cluster_id":"1","member_id":"2","revision":"7","raft_term":"2"})";
  const RangeResult range = parseRange(
      "{" + header +
      R"(,"kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"5","version":"3","value":"YmFy","lease":"9"}],"count":"1"})");
  CHECK(range.revision == 7);
  REQUIRE(range.kvs.size() == 1);
  CHECK(range.kvs[0].key == "foo");
  CHECK(range.kvs[0].value == "bar");
  CHECK(range.kvs[0].createRevision == 2);
  CHECK(range.kvs[0].modRevision == 5);
  CHECK(range.kvs[0].version == 3);
  CHECK(range.kvs[0].lease == 9);
  CHECK(parseRange("{" + header + "}").kvs.empty());  // no key: no kvs, no count
  CHECK(parseRevision("{" + header + "}") == 7);

  const TxnResult lost = parseTxn(
      "{" + header +
      R"(,"responses":[{"response_range":{"header":{"revision":"7"},"kvs":[{"key":"Zm9v","value":"eA=="}],"count":"1"}}]})");
  CHECK_FALSE(lost.succeeded);
  REQUIRE(lost.kvs.size() == 1);
  CHECK(lost.kvs[0].value == "x");
  const TxnResult won =
      parseTxn("{" + header + R"(,"succeeded":true,"responses":[{"response_put":{"header":{"revision":"8"}}}]})");
  CHECK(won.succeeded);
  CHECK(won.kvs.empty());

  const LeaseGrant grant = parseLeaseGrant("{" + header + R"(,"ID":"7919758093884012809","TTL":"2"})");
  CHECK(grant.id == 7919758093884012809LL);
  CHECK(grant.ttlSeconds == 2);
  CHECK(parseKeepAlive(R"({"result":{)" + header + R"(,"ID":"5","TTL":"10"}})" + "\n") == 10);
  CHECK(parseKeepAlive(R"({"result":{)" + header + R"(,"ID":"5"}})") == 0);  // expired

  const std::optional<GatewayError> error = gatewayError(
      R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})");
  REQUIRE(error);
  CHECK(error->code == kNotFound);
  CHECK(error->message == "etcdserver: requested lease not found");
  CHECK_FALSE(gatewayError("{" + header + "}"));
}

TEST_CASE("etcd codec: a counter kept in the key's version, and reads and writes of many keys at once",
          "[etcd_codec]") {
  // An increment compares the value with the marker (no revision: no other put makes it
  // fail) and puts the marker again, asking for the entry it replaces.
  const json increment = json::parse(incrementTxnRequest("c"));
  CHECK(increment["compare"][0] ==
        json{{"key", "Yw=="}, {"result", "EQUAL"}, {"target", "VALUE"}, {"value", base64Encode(kCounterMarker)}});
  CHECK(increment["success"][0]["request_put"] ==
        json{{"key", "Yw=="}, {"value", base64Encode(kCounterMarker)}, {"prev_kv", true}});
  CHECK(increment["failure"][0]["request_range"]["key"] == "Yw==");
  const std::string header = R"("header":{"revision":"9"})";
  const TxnResult taken = parseTxn(
      "{" + header +
      R"(,"succeeded":true,"responses":[{"response_put":{"header":{"revision":"9"},"prev_kv":{"key":"Yw==","version":"4","value":")" +
      base64Encode(kCounterMarker) + R"("}}}]})");
  REQUIRE(taken.prevKv);
  CHECK(taken.prevKv->version == 4);

  KeyValue counter;
  counter.value = kCounterMarker;
  counter.version = 5;
  CHECK(storedValue(counter) == "5");
  KeyValue plain;
  plain.value = "5x";
  plain.version = 9;
  CHECK(storedValue(plain) == "5x");

  const json puts = json::parse(putAllTxnRequest({"a", "b"}, {"1", ""}));
  CHECK_FALSE(puts.contains("compare"));
  CHECK(puts["success"] == json::array({json{{"request_put", {{"key", "YQ=="}, {"value", "MQ=="}}}},
                                        json{{"request_put", {{"key", "Yg=="}, {"value", ""}}}}}));
  CHECK(json::parse(rangeAllTxnRequest({"a", "b"}))["success"][1] == json{{"request_range", {{"key", "Yg=="}}}});
  const RangeAllResult read = parseRangeAll(
      "{" + header +
          R"(,"succeeded":true,"responses":[{"response_range":{"kvs":[{"key":"YQ==","value":"MQ=="}],"count":"1"}},{"response_range":{}}]})",
      2);
  CHECK(read.revision == 9);
  REQUIRE(read.kvs.size() == 2);
  REQUIRE(read.kvs[0]);
  CHECK(read.kvs[0]->value == "1");
  CHECK_FALSE(read.kvs[1]);
  CHECK_THROWS_AS(parseRangeAll("{" + header + R"(,"responses":[]})", 2), Error);  // not one answer per key
}

TEST_CASE("etcd codec: a malformed answer is a one-line protocol error, never a crash", "[etcd_codec]") {
  for (const std::string bad : {"", "not json", "[]", "{}", R"({"header":{"revision":"x7"}})",
                                R"({"header":{},"kvs":[{"key":"!!"}]})", R"({"header":{},"kvs":"no"})"}) {
    INFO(bad);
    try {
      parseRange(bad);
      FAIL("accepted");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::Protocol);
      CHECK(std::string(error.what()).find('\n') == std::string::npos);
    }
  }
  CHECK_THROWS_AS(parseLeaseGrant(R"({"header":{}})"), Error);  // no ID
  CHECK_THROWS_AS(parseKeepAlive(R"({"header":{}})"), Error);
}

TEST_CASE("etcd codec: a watch request and the stream's messages", "[etcd_codec]") {
  const json create = json::parse(watchCreateRequest("/a", "/b", 42)).at("create_request");
  CHECK(create.at("key") == base64Encode("/a"));
  CHECK(create.at("range_end") == base64Encode("/b"));
  CHECK(create.at("start_revision") == "42");
  CHECK(create.at("prev_kv") == true);
  CHECK_FALSE(json::parse(watchCreateRequest("/a", "", 0)).at("create_request").contains("range_end"));
  CHECK_FALSE(create.contains("filters"));
  CHECK(json::parse(watchCreateRequest("/a", "/b", 0, true)).at("create_request").at("filters") ==
        json::array({"NOPUT"}));

  // As etcd 3.4's gateway streams them, one per line.
  const std::string created = R"({"result":{"header":{"revision":"7"},"created":true}})";
  const WatchMessage first = parseWatchMessage(created);
  CHECK(first.revision == 7);
  CHECK(first.events.empty());
  CHECK_FALSE(first.canceled);
  const std::string put = R"({"result":{"header":{"revision":"8"},"events":[{"kv":{"key":")" + base64Encode("/a") +
                          R"(","create_revision":"8","mod_revision":"8","version":"1","value":")" + base64Encode("v") +
                          R"("}}]}})";
  const WatchMessage changed = parseWatchMessage(put);
  REQUIRE(changed.events.size() == 1);
  CHECK_FALSE(changed.events[0].deleted);
  CHECK(changed.events[0].kv.value == "v");
  CHECK(changed.events[0].kv.modRevision == 8);
  const std::string deleted = R"({"result":{"header":{"revision":"9"},"events":[{"type":"DELETE","kv":{"key":")" +
                              base64Encode("/a") + R"(","mod_revision":"9"},"prev_kv":{"key":")" + base64Encode("/a") +
                              R"(","value":")" + base64Encode("notice") + R"("}}]}})";
  const WatchMessage gone = parseWatchMessage(deleted);
  REQUIRE(gone.events.size() == 1);
  CHECK(gone.events[0].deleted);
  REQUIRE(gone.events[0].prevKv);
  CHECK(gone.events[0].prevKv->value == "notice");
  const WatchMessage compacted =
      parseWatchMessage(R"({"result":{"header":{"revision":"9"},"canceled":true,"compact_revision":"5"}})");
  CHECK(compacted.canceled);
  CHECK(compacted.compactRevision == 5);
  // An error streamed instead of a result, and what is not a message.
  for (const std::string& bad : {std::string(R"({"error":{"grpc_code":14,"message":"no leader"}})"), std::string("{}"),
                                 std::string(R"({"result":{"events":"x"}})")}) {
    INFO(bad);
    CHECK_THROWS_AS(parseWatchMessage(bad), Error);
  }
}
