// The TCPStore wire codec: every command of both dialects round-trips, hand-written golden
// bytes match what torch's clients send, incomplete input asks for more, and bad input is
// refused without reading past it or allocating what it claims.
//
// Wire format, as torch's c10d TCPStore client writes it (torch 2.x
// torch/csrc/distributed/c10d/TCPStoreBackend.hpp and TCPStore.cpp; 1.13 TCPStore.cpp):
// one command byte, then the arguments; integers raw little-endian (host order on every
// platform torch supports); byte strings a u64 length then the bytes; key counts u64.
//   torch 2.x: 0 VALIDATE u32, 1 SET, 2 COMPARE_SET, 3 GET, 4 ADD, 5 CHECK, 6 WAIT,
//              7 GETNUMKEYS, 8 DELETE_KEY, 9 APPEND, 10 MULTI_GET, 11 MULTI_SET,
//              12 CANCEL_WAIT, 13 PING u32, 14-16 the libuv server's queues
//   torch 1.13: 0 SET, 1 COMPARE_SET, 2 GET, 3 ADD, 4 CHECK, 5 WAIT, 6 GETNUMKEYS,
//              7 WATCH_KEY, 8 DELETE_KEY
//   pltrun, both: 0xA0 AUTH_HELLO, 0xA1 AUTH_PROOF (32 raw bytes), 0xA2 SET_EPHEMERAL,
//                 0xA3 ON_CLOSE_SET (key, value; an empty key clears)
// The expected bytes below are spelled out by hand (or by the shift-based helpers in this
// file), never produced by the append* functions under test. They follow
// docs/TCPSTORE_PROTOCOL.md: framing §1.1, the 1.13 table §2.1, the 2.x table §3.2, the 2.x
// connection start §3.3, dialect detection §7, and the observed hex dumps of §8, which are
// replayed verbatim below.

#include "rendezvous/store/store_protocol.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

using namespace pltrun::rdzv;

namespace Catch {
template <>
struct StringMaker<DecodeStatus> {
  static std::string convert(DecodeStatus status) {
    switch (status) {
      case DecodeStatus::NeedMore:
        return "NeedMore";
      case DecodeStatus::Complete:
        return "Complete";
      case DecodeStatus::Invalid:
        return "Invalid";
      case DecodeStatus::Unsupported:
        return "Unsupported";
    }
    return "?";
  }
};
template <>
struct StringMaker<Command> {
  static std::string convert(Command command) { return commandName(command); }
};
template <>
struct StringMaker<Dialect> {
  static std::string convert(Dialect dialect) { return dialect == Dialect::Torch2 ? "Torch2" : "Torch113"; }
};
}  // namespace Catch

namespace {

const ProtocolLimits kDefaultLimits;

// ---- hand-built wire bytes (independent of the code under test) ----

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int value : values) out.push_back(static_cast<char>(static_cast<unsigned char>(value)));
  return out;
}

std::string le32(std::uint32_t value) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return out;
}

std::string le64(std::uint64_t value) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return out;
}

// A torch byte string: u64 little-endian length, then the bytes.
std::string wireString(const std::string& text) { return le64(text.size()) + text; }

std::string hex(const std::string& data) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : data) {
    if (!out.empty()) out += ' ';
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string dialectName(std::optional<Dialect> dialect) {
  if (!dialect) return "undecided";
  return *dialect == Dialect::Torch2 ? "Torch2" : "Torch113";
}

// ---- requests ----

Request makeRequest(Command command, std::vector<std::string> keys = {}, std::vector<std::string> values = {},
                    std::int64_t number = 0) {
  Request request;
  request.command = command;
  request.keys = std::move(keys);
  request.values = std::move(values);
  request.number = number;
  return request;
}

const std::string kNulKey("k\0e\0y", 5);
const std::string kNulValue("\0\x01\xff\0", 4);
const std::string kProof = [] {
  std::string proof;
  for (int i = 0; i < 32; ++i) proof.push_back(static_cast<char>(i * 7 + (i == 5 ? 0 : 1)));  // holds a NUL
  return proof;
}();

// Requests that exist in both dialects, with plain, binary (NUL bytes) and empty arguments.
std::vector<Request> sharedRequests() {
  const std::string big(70000, 'x');
  return {
      makeRequest(Command::Set, {"k"}, {"v"}),
      makeRequest(Command::Set, {kNulKey}, {kNulValue}),
      makeRequest(Command::Set, {"k"}, {""}),
      makeRequest(Command::Set, {""}, {""}),
      makeRequest(Command::Set, {"big"}, {big}),
      makeRequest(Command::CompareSet, {"k"}, {"old", "new"}),
      makeRequest(Command::CompareSet, {kNulKey}, {"", kNulValue}),
      makeRequest(Command::CompareSet, {"k"}, {kNulValue, ""}),
      makeRequest(Command::Get, {"k"}),
      makeRequest(Command::Get, {kNulKey}),
      makeRequest(Command::Add, {"counter"}, {}, 1),
      makeRequest(Command::Add, {"counter"}, {}, -1),
      makeRequest(Command::Add, {kNulKey}, {}, INT64_MIN),
      makeRequest(Command::Add, {"c"}, {}, INT64_MAX),
      makeRequest(Command::Check, {"a"}),
      makeRequest(Command::Check, {"a", kNulKey, ""}),
      makeRequest(Command::Check, {}),
      makeRequest(Command::Wait, {"a"}),
      makeRequest(Command::Wait, {"a", "b", kNulKey}),
      makeRequest(Command::GetNumKeys),
      makeRequest(Command::DeleteKey, {"k"}),
      makeRequest(Command::DeleteKey, {kNulKey}),
      makeRequest(Command::AuthHello, {"run-1"}, {kProof}),
      makeRequest(Command::AuthHello, {""}, {std::string(32, '\0')}),
      makeRequest(Command::AuthProof, {}, {kProof}),
      makeRequest(Command::AuthProof, {}, {std::string(32, '\0')}),
      makeRequest(Command::SetEphemeral, {"eph"}, {"v"}),
      makeRequest(Command::SetEphemeral, {kNulKey}, {""}),
      makeRequest(Command::OnCloseSet, {"/round-3/ended"}, {R"({"reason":"node_lost"})"}),
      makeRequest(Command::OnCloseSet, {kNulKey}, {kNulValue}),
      makeRequest(Command::OnCloseSet, {""}, {""}),  // clears the notice
  };
}

std::vector<Request> requestsFor(Dialect dialect) {
  std::vector<Request> requests = sharedRequests();
  if (dialect == Dialect::Torch2) {
    std::vector<Request> torch2Only = {
        makeRequest(Command::Validate, {}, {}, kValidationMagic),
        makeRequest(Command::Append, {"k"}, {"v"}),
        makeRequest(Command::Append, {kNulKey}, {kNulValue}),
        makeRequest(Command::Append, {"k"}, {""}),
        makeRequest(Command::MultiGet, {"a", "b"}),
        makeRequest(Command::MultiGet, {kNulKey, ""}),
        makeRequest(Command::MultiGet, {}),
        makeRequest(Command::MultiSet, {"a", "b"}, {"1", "2"}),
        makeRequest(Command::MultiSet, {kNulKey, ""}, {"", kNulValue}),
        makeRequest(Command::MultiSet, {}, {}),
        makeRequest(Command::CancelWait),
        makeRequest(Command::Ping, {}, {}, 0),
        makeRequest(Command::Ping, {}, {}, 12345),
        makeRequest(Command::Ping, {}, {}, 0xFFFFFFFFll),
        makeRequest(Command::QueuePush, {"q"}, {"item"}),
        makeRequest(Command::QueuePush, {kNulKey}, {""}),
        makeRequest(Command::QueuePop, {"q"}),
        makeRequest(Command::QueueLen, {kNulKey}),
        makeRequest(Command::ListKeys),
        makeRequest(Command::Barrier, {"b"}, {}, 8),
    };
    requests.insert(requests.end(), torch2Only.begin(), torch2Only.end());
  }
  return requests;
}

const Dialect kDialects[] = {Dialect::Torch2, Dialect::Torch113};

void checkSameRequest(const Request& actual, const Request& expected) {
  CHECK(actual.command == expected.command);
  CHECK(actual.keys == expected.keys);
  CHECK(actual.values == expected.values);
  CHECK(actual.number == expected.number);
}

// Decodes `wire` and expects exactly `expected`, using all of it.
void checkDecodesTo(Dialect dialect, const std::string& wire, const Request& expected) {
  DecodeResult result = decodeRequest(dialect, wire, kDefaultLimits);
  REQUIRE(result.status == DecodeStatus::Complete);
  CHECK(result.consumed == wire.size());
  CHECK(result.error.empty());
  checkSameRequest(result.request, expected);
}

DecodeResult decode(Dialect dialect, const std::string& wire, const ProtocolLimits& limits = kDefaultLimits) {
  return decodeRequest(dialect, wire, limits);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// (1) Round trips

TEST_CASE("every command of both dialects survives encode then decode", "[store_protocol]") {
  for (Dialect dialect : kDialects) {
    int count = 0;
    for (const Request& request : requestsFor(dialect)) {
      CAPTURE(dialect, request.command, count++);
      std::string wire = encodeRequest(dialect, request);
      REQUIRE_FALSE(wire.empty());
      DecodeResult result = decode(dialect, wire);
      REQUIRE(result.status == DecodeStatus::Complete);
      CHECK(result.consumed == wire.size());
      CHECK(result.error.empty());
      checkSameRequest(result.request, request);
    }
  }
}

TEST_CASE("the round trip covers every command each dialect serves", "[store_protocol]") {
  // Guards the list above: each command a dialect has a byte for (and serves) appears.
  auto covered = [](Dialect dialect, Command command) {
    for (const Request& request : requestsFor(dialect)) {
      if (request.command == command) return true;
    }
    return false;
  };
  for (Command command :
       {Command::Validate,  Command::Set,          Command::CompareSet, Command::Get,       Command::Add,
        Command::Check,     Command::Wait,         Command::GetNumKeys, Command::DeleteKey, Command::Append,
        Command::MultiGet,  Command::MultiSet,     Command::CancelWait, Command::Ping,      Command::AuthHello,
        Command::AuthProof, Command::SetEphemeral, Command::OnCloseSet, Command::QueuePush, Command::QueuePop,
        Command::QueueLen,  Command::ListKeys,     Command::Barrier}) {
    CAPTURE(command);
    CHECK(covered(Dialect::Torch2, command));
  }
  for (Command command : {Command::Set, Command::CompareSet, Command::Get, Command::Add, Command::Check, Command::Wait,
                          Command::GetNumKeys, Command::DeleteKey, Command::AuthHello, Command::AuthProof,
                          Command::SetEphemeral, Command::OnCloseSet}) {
    CAPTURE(command);
    CHECK(covered(Dialect::Torch113, command));
  }
}

TEST_CASE("torch 1.13 has no bytes for torch 2.x's newer commands", "[store_protocol]") {
  for (Command command : {Command::Validate, Command::Append, Command::MultiGet, Command::MultiSet, Command::CancelWait,
                          Command::Ping, Command::QueuePush, Command::QueuePop, Command::QueueLen, Command::ListKeys}) {
    CAPTURE(command);
    CHECK(encodeRequest(Dialect::Torch113, makeRequest(command, {"k"}, {"v"})).empty());
  }
  // ... and torch 2.x has none for 1.13's WATCH_KEY.
  CHECK(encodeRequest(Dialect::Torch2, makeRequest(Command::WatchKey, {"k"})).empty());
}

// ---------------------------------------------------------------------------------------
// (2) Golden bytes, written by hand from the wire format

// TCPSTORE_PROTOCOL.md §3.2 (command table, torch 2.5/2.6) and §1.1 (framing).
TEST_CASE("torch 2.x golden bytes", "[store_protocol]") {
  const Dialect d = Dialect::Torch2;

  SECTION("VALIDATE: 00, magic 0x3C85F7CE little-endian") {
    const std::string wire = bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C});
    Request request = makeRequest(Command::Validate, {}, {}, kValidationMagic);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("SET(\"k\", \"v\")") {
    const std::string wire = bytes({0x01,                                            // SET
                                    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // key length 1
                                    'k',                                             //
                                    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // value length 1
                                    'v'});
    Request request = makeRequest(Command::Set, {"k"}, {"v"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("SET with a 300-byte key: the length spans two bytes, low byte first") {
    const std::string key(300, 'K');
    const std::string wire = bytes({0x01, 0x2C, 0x01, 0, 0, 0, 0, 0, 0}) + key + bytes({0, 0, 0, 0, 0, 0, 0, 0});
    Request request = makeRequest(Command::Set, {key}, {""});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("COMPARE_SET(\"k\", \"old\", \"new\")") {
    const std::string wire = bytes({0x02, 1, 0,   0,   0,   0, 0, 0, 0, 'k', 3, 0, 0, 0,   0,   0,
                                    0,    0, 'o', 'l', 'd', 3, 0, 0, 0, 0,   0, 0, 0, 'n', 'e', 'w'});
    Request request = makeRequest(Command::CompareSet, {"k"}, {"old", "new"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("GET(\"key\")") {
    const std::string wire = bytes({0x03, 3, 0, 0, 0, 0, 0, 0, 0, 'k', 'e', 'y'});
    Request request = makeRequest(Command::Get, {"key"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("ADD(\"k\", -1): the delta is i64 ff x 8") {
    const std::string wire = bytes({0x04, 1, 0, 0, 0, 0, 0, 0, 0, 'k', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
    Request request = makeRequest(Command::Add, {"k"}, {}, -1);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("ADD(\"k\", 0x0102030405060708): low byte first") {
    const std::string wire = bytes({0x04, 1, 0, 0, 0, 0, 0, 0, 0, 'k', 8, 7, 6, 5, 4, 3, 2, 1});
    Request request = makeRequest(Command::Add, {"k"}, {}, 0x0102030405060708ll);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("CHECK([\"a\", \"bc\"]): u64 count, then the keys") {
    const std::string wire =
        bytes({0x05, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'a', 2, 0, 0, 0, 0, 0, 0, 0, 'b', 'c'});
    Request request = makeRequest(Command::Check, {"a", "bc"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("WAIT([\"a\"])") {
    const std::string wire = bytes({0x06, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'a'});
    Request request = makeRequest(Command::Wait, {"a"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("GETNUMKEYS: the byte alone") {
    const std::string wire = bytes({0x07});
    Request request = makeRequest(Command::GetNumKeys);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("DELETE_KEY(\"k\")") {
    const std::string wire = bytes({0x08, 1, 0, 0, 0, 0, 0, 0, 0, 'k'});
    Request request = makeRequest(Command::DeleteKey, {"k"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("APPEND(\"k\", \"v\")") {
    const std::string wire = bytes({0x09, 1, 0, 0, 0, 0, 0, 0, 0, 'k', 1, 0, 0, 0, 0, 0, 0, 0, 'v'});
    Request request = makeRequest(Command::Append, {"k"}, {"v"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("MULTI_GET([\"a\", \"b\"])") {
    const std::string wire =
        bytes({0x0A, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'a', 1, 0, 0, 0, 0, 0, 0, 0, 'b'});
    Request request = makeRequest(Command::MultiGet, {"a", "b"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("MULTI_SET: count, then key and value interleaved") {
    const std::string wire =
        bytes({0x0B, 2, 0, 0, 0, 0, 0, 0, 0}) + wireString("a") + wireString("1") + wireString("b") + wireString("22");
    CHECK(hex(wire.substr(0, 10)) == "0b 02 00 00 00 00 00 00 00 01");  // the helper, checked by hand
    Request request = makeRequest(Command::MultiSet, {"a", "b"}, {"1", "22"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("CANCEL_WAIT: the byte alone") {
    const std::string wire = bytes({0x0C});
    Request request = makeRequest(Command::CancelWait);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("PING(0x01020304): 0D, then the u32 nonce low byte first") {
    const std::string wire = bytes({0x0D, 0x04, 0x03, 0x02, 0x01});
    Request request = makeRequest(Command::Ping, {}, {}, 0x01020304);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("PING with a nonce whose top bit is set decodes unsigned") {
    const std::string wire = bytes({0x0D, 0xEF, 0xBE, 0xAD, 0xDE});
    Request request = makeRequest(Command::Ping, {}, {}, 0xDEADBEEFll);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
}

// TCPSTORE_PROTOCOL.md §2.1 (command table, torch 1.13) and §1.1 (framing).
TEST_CASE("torch 1.13 golden bytes", "[store_protocol]") {
  const Dialect d = Dialect::Torch113;

  SECTION("SET(\"k\", \"v\"): 00 in 1.13") {
    const std::string wire = bytes({0x00, 1, 0, 0, 0, 0, 0, 0, 0, 'k', 1, 0, 0, 0, 0, 0, 0, 0, 'v'});
    Request request = makeRequest(Command::Set, {"k"}, {"v"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("COMPARE_SET: 01") {
    const std::string wire = bytes({0x01}) + wireString("k") + wireString("") + wireString("x");
    CHECK(hex(wire) == "01 01 00 00 00 00 00 00 00 6b 00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 78");  // by hand
    Request request = makeRequest(Command::CompareSet, {"k"}, {"", "x"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("GET: 02") {
    const std::string wire = bytes({0x02, 1, 0, 0, 0, 0, 0, 0, 0, 'k'});
    Request request = makeRequest(Command::Get, {"k"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("ADD(\"k\", -1): 03, ff x 8") {
    const std::string wire = bytes({0x03, 1, 0, 0, 0, 0, 0, 0, 0, 'k', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
    Request request = makeRequest(Command::Add, {"k"}, {}, -1);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("CHECK: 04, u64 count") {
    const std::string wire = bytes({0x04, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'a'});
    Request request = makeRequest(Command::Check, {"a"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("WAIT: 05, u64 count") {
    const std::string wire =
        bytes({0x05, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'a', 1, 0, 0, 0, 0, 0, 0, 0, 'b'});
    Request request = makeRequest(Command::Wait, {"a", "b"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("GETNUMKEYS: 06") {
    const std::string wire = bytes({0x06});
    Request request = makeRequest(Command::GetNumKeys);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("DELETE_KEY: 08") {
    const std::string wire = bytes({0x08, 1, 0, 0, 0, 0, 0, 0, 0, 'k'});
    Request request = makeRequest(Command::DeleteKey, {"k"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
}

// Bytes captured from real torch clients, copied from TCPSTORE_PROTOCOL.md §8 (and §1.2):
// torch's client prefixes user keys with "/", so "k" travels as "/k" (2f 6b).
namespace {

std::string fromHex(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    out.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
    i += 2;
  }
  return out;
}

}  // namespace

TEST_CASE("requests captured from torch 1.13 clients decode and re-encode byte for byte", "[store_protocol]") {
  const Dialect d = Dialect::Torch113;
  struct Captured {
    const char* what;
    const char* wire;
    Request request;
  };
  const Captured captured[] = {
      {"§8.1 set(\"k\",\"v\")", "00 02 00 00 00 00 00 00 00 2f 6b 01 00 00 00 00 00 00 00 76",
       makeRequest(Command::Set, {"/k"}, {"v"})},
      {"§8.2 add(\"c\",5)", "03 02 00 00 00 00 00 00 00 2f 63 05 00 00 00 00 00 00 00",
       makeRequest(Command::Add, {"/c"}, {}, 5)},
      {"§8.2 add(\"c\",-3)", "03 02 00 00 00 00 00 00 00 2f 63 fd ff ff ff ff ff ff ff",
       makeRequest(Command::Add, {"/c"}, {}, -3)},
      {"§8.3 WAIT n=1 [\"/k\"]", "05 01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 2f 6b",
       makeRequest(Command::Wait, {"/k"})},
      {"§8.3 GET \"/k\"", "02 02 00 00 00 00 00 00 00 2f 6b", makeRequest(Command::Get, {"/k"})},
      {"§8.4 compare_set(\"k\",\"old\",\"new\")",
       "01 02 00 00 00 00 00 00 00 2f 6b 03 00 00 00 00 00 00 00 6f 6c 64 03 00 00 00 00 00 00 00 6e 65 77",
       makeRequest(Command::CompareSet, {"/k"}, {"old", "new"})},
      {"§8.4 delete_key(\"k\")", "08 02 00 00 00 00 00 00 00 2f 6b", makeRequest(Command::DeleteKey, {"/k"})},
      {"§8.4 num_keys()", "06", makeRequest(Command::GetNumKeys)},
      {"§1.2 ADD \"init/\" 1", "03 05 00 00 00 00 00 00 00 69 6e 69 74 2f 01 00 00 00 00 00 00 00",
       makeRequest(Command::Add, {"init/"}, {}, 1)},
  };
  for (const Captured& c : captured) {
    CAPTURE(c.what);
    const std::string wire = fromHex(c.wire);
    checkDecodesTo(d, wire, c.request);
    CHECK(hex(encodeRequest(d, c.request)) == hex(wire));
    // §7: a 1.13 first request is recognised as 1.13 from its start.
    CHECK(dialectName(detectDialect(wire)) == "Torch113");
  }
}

TEST_CASE("requests captured from torch 2.6 clients decode and re-encode byte for byte", "[store_protocol]") {
  const Dialect d = Dialect::Torch2;
  SECTION("§3.3/§8.4 the connection start: VALIDATE then PING(pid 0x3757) in one segment") {
    const std::string wire = fromHex("00 ce f7 85 3c 0d 57 37 00 00");
    CHECK(dialectName(detectDialect(wire)) == "Torch2");
    DecodeResult validate = decode(d, wire);
    REQUIRE(validate.status == DecodeStatus::Complete);
    CHECK(validate.consumed == 5);
    CHECK(validate.request.command == Command::Validate);
    CHECK_FALSE(hasReply(Command::Validate));  // "No reply is read."
    checkDecodesTo(d, wire.substr(5), makeRequest(Command::Ping, {}, {}, 0x3757));
    CHECK(hex(encodeRequest(d, makeRequest(Command::Validate, {}, {}, kValidationMagic)) +
              encodeRequest(d, makeRequest(Command::Ping, {}, {}, 0x3757))) == hex(wire));
    // The two sends may also arrive in separate segments (§3.3): the first alone is enough.
    CHECK(dialectName(detectDialect(wire.substr(0, 5))) == "Torch2");
  }
  SECTION("§8.3 get(\"k\"): WAIT then GET") {
    const std::string wait = fromHex("06 01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 2f 6b");
    const std::string get = fromHex("03 02 00 00 00 00 00 00 00 2f 6b");
    checkDecodesTo(d, wait, makeRequest(Command::Wait, {"/k"}));
    checkDecodesTo(d, get, makeRequest(Command::Get, {"/k"}));
    CHECK(hex(encodeRequest(d, makeRequest(Command::Wait, {"/k"}))) == hex(wait));
    CHECK(hex(encodeRequest(d, makeRequest(Command::Get, {"/k"}))) == hex(get));
  }
  SECTION("§8.4 wait([\"a\"], 1s) timing out: WAIT, then the 1-byte CANCEL_WAIT") {
    const std::string wait = fromHex("06 01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 2f 61");
    checkDecodesTo(d, wait, makeRequest(Command::Wait, {"/a"}));
    checkDecodesTo(d, fromHex("0c"), makeRequest(Command::CancelWait));
  }
}

// TCPSTORE_PROTOCOL.md §6: what each dialect's decoder makes of the other dialect's client.
TEST_CASE("a client of the other dialect is refused, not misread", "[store_protocol]") {
  // A 1.13 SET read as 2.x: VALIDATE with the magic 02 00 00 00 (the key length's low half).
  const std::string set113 = fromHex("00 02 00 00 00 00 00 00 00 2f 6b 01 00 00 00 00 00 00 00 76");
  CHECK(decode(Dialect::Torch2, set113).status == DecodeStatus::Invalid);
  // A 2.6 VALIDATE + PING read as 1.13: a SET whose key length is ce f7 85 3c 0d 57 37 00,
  // about 10^16 bytes, refused by the key limit instead of allocated.
  const std::string start26 = fromHex("00 ce f7 85 3c 0d 57 37 00 00");
  DecodeResult result = decode(Dialect::Torch113, start26);
  CHECK(result.status == DecodeStatus::Invalid);
  CHECK_THAT(result.error, Catch::Contains("key"));
}

TEST_CASE("pltrun's extension commands have the same bytes in both dialects", "[store_protocol]") {
  for (Dialect d : kDialects) {
    CAPTURE(d);
    {
      // The 32-byte nonce raw, then the context like a key (u64 length, bytes).
      const std::string wire = bytes({0xA0}) + kProof + bytes({3, 0, 0, 0, 0, 0, 0, 0, 'r', 'u', 'n'});
      Request request = makeRequest(Command::AuthHello, {"run"}, {kProof});
      CHECK(hex(encodeRequest(d, request)) == hex(wire));
      checkDecodesTo(d, wire, request);
    }
    {
      // 32 raw bytes, no length prefix.
      const std::string wire = bytes({0xA1}) + kProof;
      REQUIRE(wire.size() == 33);
      Request request = makeRequest(Command::AuthProof, {}, {kProof});
      CHECK(hex(encodeRequest(d, request)) == hex(wire));
      checkDecodesTo(d, wire, request);
    }
    {
      const std::string wire = bytes({0xA2, 1, 0, 0, 0, 0, 0, 0, 0, 'k', 2, 0, 0, 0, 0, 0, 0, 0, 'v', 0x00});
      Request request = makeRequest(Command::SetEphemeral, {"k"}, {std::string("v\0", 2)});
      CHECK(hex(encodeRequest(d, request)) == hex(wire));
      checkDecodesTo(d, wire, request);
    }
    {
      // ON_CLOSE_SET: key and value, length-prefixed, as SET.
      const std::string wire = bytes({0xA3, 2, 0, 0, 0, 0, 0, 0, 0, '/', 'k', 3, 0, 0, 0, 0, 0, 0, 0, 'v', 0x00, 'w'});
      Request request = makeRequest(Command::OnCloseSet, {"/k"}, {std::string("v\0w", 3)});
      CHECK(hex(encodeRequest(d, request)) == hex(wire));
      checkDecodesTo(d, wire, request);
    }
    {
      // ON_CLOSE_SET with an empty key (the clear): two zero lengths.
      const std::string wire = bytes({0xA3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
      Request request = makeRequest(Command::OnCloseSet, {""}, {""});
      CHECK(hex(encodeRequest(d, request)) == hex(wire));
      checkDecodesTo(d, wire, request);
    }
  }
}

TEST_CASE("a truncated ON_CLOSE_SET needs more, wherever it is cut", "[store_protocol]") {
  const std::string wire = bytes({0xA3}) + wireString("key") + wireString("value");
  for (Dialect d : kDialects) {
    CAPTURE(d);
    // The command byte alone, part of the key length, the key, part of the value.
    for (size_t length :
         {size_t(1), size_t(5), size_t(9), size_t(11), size_t(12), size_t(19), size_t(20), wire.size() - 1}) {
      CAPTURE(length);
      DecodeResult result = decode(d, wire.substr(0, length));
      CHECK(result.status == DecodeStatus::NeedMore);
      CHECK(result.consumed == 0);
      CHECK(result.error.empty());
    }
    checkDecodesTo(d, wire, makeRequest(Command::OnCloseSet, {"key"}, {"value"}));
    // Its lengths are checked against the limits before the bytes arrive.
    ProtocolLimits limits;
    limits.maxKeySize = 2;
    DecodeResult early = decode(d, bytes({0xA3}) + le64(3), limits);
    CHECK(early.status == DecodeStatus::Invalid);
    CHECK_THAT(early.error, Catch::Contains("ON_CLOSE_SET"));
  }
}

// ---------------------------------------------------------------------------------------
// (3) Incomplete input and input holding more than one request

TEST_CASE("every proper prefix of every request needs more, the whole is complete", "[store_protocol]") {
  for (Dialect dialect : kDialects) {
    for (const Request& request : requestsFor(dialect)) {
      const std::string wire = encodeRequest(dialect, request);
      if (wire.size() > 1000) continue;  // the 70 kB value: prefixes tested below, sampled
      CAPTURE(dialect, request.command, hex(wire));
      for (size_t length = 0; length < wire.size(); ++length) {
        CAPTURE(length);
        DecodeResult result = decode(dialect, wire.substr(0, length));
        CHECK(result.status == DecodeStatus::NeedMore);
        CHECK(result.consumed == 0);
        CHECK(result.error.empty());
      }
      DecodeResult whole = decode(dialect, wire);
      CHECK(whole.status == DecodeStatus::Complete);
      CHECK(whole.consumed == wire.size());
    }
  }
}

TEST_CASE("prefixes of a large value need more", "[store_protocol]") {
  const std::string value(70000, 'x');
  const std::string wire = encodeRequest(Dialect::Torch2, makeRequest(Command::Set, {"big"}, {value}));
  REQUIRE(wire.size() == 1 + 8 + 3 + 8 + value.size());
  for (size_t length :
       {size_t(0), size_t(1), size_t(9), size_t(12), size_t(19), size_t(20), size_t(35000), wire.size() - 1}) {
    CAPTURE(length);
    CHECK(decode(Dialect::Torch2, wire.substr(0, length)).status == DecodeStatus::NeedMore);
  }
  CHECK(decode(Dialect::Torch2, wire).status == DecodeStatus::Complete);
}

TEST_CASE("only the first request is consumed when a second follows", "[store_protocol]") {
  for (Dialect dialect : kDialects) {
    const std::vector<Request> requests = requestsFor(dialect);
    for (size_t i = 0; i < requests.size(); ++i) {
      const Request& first = requests[i];
      const Request& second = requests[(i + 1) % requests.size()];
      const std::string firstWire = encodeRequest(dialect, first);
      const std::string secondWire = encodeRequest(dialect, second);
      CAPTURE(dialect, first.command, second.command, i);

      const std::string both = firstWire + secondWire;
      DecodeResult result = decode(dialect, both);
      REQUIRE(result.status == DecodeStatus::Complete);
      CHECK(result.consumed == firstWire.size());
      checkSameRequest(result.request, first);

      DecodeResult next = decode(dialect, both.substr(result.consumed));
      REQUIRE(next.status == DecodeStatus::Complete);
      CHECK(next.consumed == secondWire.size());
      checkSameRequest(next.request, second);

      // The first request followed by only part of the second is still just the first.
      DecodeResult partial = decode(dialect, firstWire + secondWire.substr(0, 1));
      REQUIRE(partial.status == DecodeStatus::Complete);
      CHECK(partial.consumed == firstWire.size());
    }
  }
}

TEST_CASE("empty input needs more", "[store_protocol]") {
  for (Dialect dialect : kDialects) {
    DecodeResult result = decode(dialect, "");
    CHECK(result.status == DecodeStatus::NeedMore);
    CHECK(result.consumed == 0);
  }
}

// ---------------------------------------------------------------------------------------
// (4) Invalid and unsupported input

// TCPSTORE_PROTOCOL.md §2.1 ("Bytes 9-13 and 0xFF made the 1.13 server reset the
// connection") and §3.2 (unknown bytes close the connection).
TEST_CASE("unknown command bytes are invalid in each dialect", "[store_protocol]") {
  SECTION("torch 1.13 stops at 8") {
    for (int byte : {9, 10, 13, 0x50, 0x9F, 0xA4, 0xFF}) {
      CAPTURE(byte);
      DecodeResult result = decode(Dialect::Torch113, bytes({byte}) + std::string(40, '\0'));
      CHECK(result.status == DecodeStatus::Invalid);
      CHECK_THAT(result.error, Catch::Contains(std::to_string(byte)));
      CHECK_THAT(result.error, Catch::Contains("1.13"));
      CHECK(result.consumed == 0);
    }
  }
  SECTION("torch 2.x stops at 16") {
    for (int byte : {19, 0x50, 0x9F, 0xA4, 0xFF}) {
      CAPTURE(byte);
      DecodeResult result = decode(Dialect::Torch2, bytes({byte}) + std::string(40, '\0'));
      CHECK(result.status == DecodeStatus::Invalid);
      CHECK_THAT(result.error, Catch::Contains(std::to_string(byte)));
      CHECK_THAT(result.error, Catch::Contains("2.x"));
      CHECK(result.consumed == 0);
    }
  }
  SECTION("an unknown byte alone is already invalid") {
    CHECK(decode(Dialect::Torch113, bytes({9})).status == DecodeStatus::Invalid);
    CHECK(decode(Dialect::Torch2, bytes({19})).status == DecodeStatus::Invalid);
  }
}

TEST_CASE("1.13's WATCH_KEY is unsupported, by name", "[store_protocol]") {
  for (const std::string& wire : {bytes({7}), bytes({7}) + wireString("k")}) {
    DecodeResult result = decode(Dialect::Torch113, wire);
    CHECK(result.status == DecodeStatus::Unsupported);
    CHECK(result.request.command == Command::WatchKey);
    CHECK_THAT(result.error, Catch::Contains("WATCH_KEY"));
  }
  SECTION("the same bytes mean other, served commands in the other dialect") {
    // 7 is GETNUMKEYS in 2.x; 14 (QUEUE_PUSH) is unknown to 1.13.
    CHECK(decode(Dialect::Torch2, bytes({7})).status == DecodeStatus::Complete);
    CHECK(decode(Dialect::Torch113, bytes({14})).status == DecodeStatus::Invalid);
  }
}

// torch >= 2.7's queues, as its TCPStore client sends them (TCPStore.cpp queuePush /
// queuePop / queueLen): the command byte, the key, and for QUEUE_PUSH the item.
TEST_CASE("2.x's queue commands: golden bytes", "[store_protocol]") {
  const Dialect d = Dialect::Torch2;
  SECTION("QUEUE_PUSH(\"q\", \"ab\"): 0E, key, item; no reply") {
    const std::string wire = bytes({0x0E}) + wireString("q") + wireString("ab");
    Request request = makeRequest(Command::QueuePush, {"q"}, {"ab"});
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
    CHECK_FALSE(hasReply(Command::QueuePush));
  }
  SECTION("QUEUE_POP(\"q\"): 0F, key") {
    const std::string wire = bytes({0x0F}) + wireString("q");
    checkDecodesTo(d, wire, makeRequest(Command::QueuePop, {"q"}));
    CHECK(hasReply(Command::QueuePop));
  }
  SECTION("QUEUE_LEN(\"q\"): 10, key") {
    const std::string wire = bytes({0x10}) + wireString("q");
    checkDecodesTo(d, wire, makeRequest(Command::QueueLen, {"q"}));
  }
  SECTION("LIST_KEYS (torch 2.8 and later, sent by 2.14's list_keys): 11, nothing more") {
    checkDecodesTo(d, bytes({0x11}), makeRequest(Command::ListKeys));
    CHECK(hasReply(Command::ListKeys));
  }
  SECTION("BARRIER(\"b\", 4) (torch 2.8 and later, 2.14's barrier): 12, key, i64 world size") {
    const std::string wire = bytes({0x12}) + wireString("b") + bytes({4, 0, 0, 0, 0, 0, 0, 0});
    Request request = makeRequest(Command::Barrier, {"b"}, {}, 4);
    CHECK(hex(encodeRequest(d, request)) == hex(wire));
    checkDecodesTo(d, wire, request);
  }
  SECTION("an item over maxValueSize is refused on its length, before its bytes") {
    ProtocolLimits limits;
    limits.maxValueSize = 4;
    std::string wire = bytes({0x0E}) + wireString("q");
    appendU64(wire, 5);
    DecodeResult result = decodeRequest(d, wire, limits);
    CHECK(result.status == DecodeStatus::Invalid);
  }
}

TEST_CASE("a key longer than maxKeySize is invalid", "[store_protocol]") {
  ProtocolLimits limits;
  limits.maxKeySize = 4;
  const std::string okKey(4, 'k');
  const std::string longKey(5, 'k');

  for (Dialect dialect : kDialects) {
    CAPTURE(dialect);
    // At the limit: fine.
    CHECK(decode(dialect, encodeRequest(dialect, makeRequest(Command::Get, {okKey})), limits).status ==
          DecodeStatus::Complete);
    // One over, in every command that carries keys.
    for (const Request& request :
         {makeRequest(Command::Set, {longKey}, {"v"}), makeRequest(Command::Get, {longKey}),
          makeRequest(Command::CompareSet, {longKey}, {"", "v"}), makeRequest(Command::Add, {longKey}, {}, 1),
          makeRequest(Command::Check, {"a", longKey}), makeRequest(Command::Wait, {longKey}),
          makeRequest(Command::DeleteKey, {longKey}), makeRequest(Command::SetEphemeral, {longKey}, {"v"}),
          makeRequest(Command::OnCloseSet, {longKey}, {"v"})}) {
      CAPTURE(request.command);
      DecodeResult result = decode(dialect, encodeRequest(dialect, request), limits);
      CHECK(result.status == DecodeStatus::Invalid);
      CHECK_THAT(result.error, Catch::Contains("key"));
      CHECK_THAT(result.error, Catch::Contains(commandName(request.command)));
    }
  }
  // Refused as soon as the length is known, without waiting for the key's bytes.
  DecodeResult early = decode(Dialect::Torch2, bytes({0x03}) + le64(5), limits);
  CHECK(early.status == DecodeStatus::Invalid);
  for (const Request& request :
       {makeRequest(Command::MultiGet, {longKey}), makeRequest(Command::MultiSet, {longKey}, {"v"}),
        makeRequest(Command::Append, {longKey}, {"v"})}) {
    CAPTURE(request.command);
    CHECK(decode(Dialect::Torch2, encodeRequest(Dialect::Torch2, request), limits).status == DecodeStatus::Invalid);
  }
}

TEST_CASE("a value longer than maxValueSize is invalid", "[store_protocol]") {
  ProtocolLimits limits;
  limits.maxValueSize = 8;
  const std::string okValue(8, 'v');
  const std::string longValue(9, 'v');

  CHECK(decode(Dialect::Torch2, encodeRequest(Dialect::Torch2, makeRequest(Command::Set, {"k"}, {okValue})), limits)
            .status == DecodeStatus::Complete);
  for (Dialect dialect : kDialects) {
    CAPTURE(dialect);
    for (const Request& request :
         {makeRequest(Command::Set, {"k"}, {longValue}), makeRequest(Command::SetEphemeral, {"k"}, {longValue}),
          makeRequest(Command::OnCloseSet, {"k"}, {longValue}),
          makeRequest(Command::CompareSet, {"k"}, {longValue, ""}),
          makeRequest(Command::CompareSet, {"k"}, {"", longValue})}) {
      CAPTURE(request.command);
      DecodeResult result = decode(dialect, encodeRequest(dialect, request), limits);
      CHECK(result.status == DecodeStatus::Invalid);
      CHECK_THAT(result.error, Catch::Contains("value"));
    }
  }
  for (const Request& request : {makeRequest(Command::Append, {"k"}, {longValue}),
                                 makeRequest(Command::MultiSet, {"a", "b"}, {"", longValue})}) {
    CAPTURE(request.command);
    CHECK(decode(Dialect::Torch2, encodeRequest(Dialect::Torch2, request), limits).status == DecodeStatus::Invalid);
  }
  // The value limit does not apply to keys, nor the key limit to values.
  ProtocolLimits smallKeys;
  smallKeys.maxKeySize = 1;
  CHECK(
      decode(Dialect::Torch2, encodeRequest(Dialect::Torch2, makeRequest(Command::Set, {"k"}, {longValue})), smallKeys)
          .status == DecodeStatus::Complete);
}

TEST_CASE("a key count over maxKeysPerRequest is invalid", "[store_protocol]") {
  ProtocolLimits limits;
  limits.maxKeysPerRequest = 2;
  for (Command command : {Command::Check, Command::Wait, Command::MultiGet}) {
    CAPTURE(command);
    Request atLimit = makeRequest(command, {"a", "b"});
    Request overLimit = makeRequest(command, {"a", "b", "c"});
    CHECK(decode(Dialect::Torch2, encodeRequest(Dialect::Torch2, atLimit), limits).status == DecodeStatus::Complete);
    DecodeResult result = decode(Dialect::Torch2, encodeRequest(Dialect::Torch2, overLimit), limits);
    CHECK(result.status == DecodeStatus::Invalid);
    CHECK_THAT(result.error, Catch::Contains("3 keys"));
  }
  CHECK(decode(Dialect::Torch2,
               encodeRequest(Dialect::Torch2, makeRequest(Command::MultiSet, {"a", "b", "c"}, {"1", "2", "3"})), limits)
            .status == DecodeStatus::Invalid);
  CHECK(decode(Dialect::Torch113, encodeRequest(Dialect::Torch113, makeRequest(Command::Wait, {"a", "b", "c"})), limits)
            .status == DecodeStatus::Invalid);
  // The count alone is enough to refuse.
  CHECK(decode(Dialect::Torch2, bytes({0x06}) + le64(3), limits).status == DecodeStatus::Invalid);
}

TEST_CASE("VALIDATE with a wrong magic number is invalid", "[store_protocol]") {
  for (std::uint32_t magic : {0u, 0x3C85F7CFu, 0xCEF7853Cu /* byte-swapped */, 0xFFFFFFFFu}) {
    CAPTURE(magic);
    DecodeResult result = decode(Dialect::Torch2, bytes({0x00}) + le32(magic));
    CHECK(result.status == DecodeStatus::Invalid);
    CHECK_FALSE(result.error.empty());
  }
  // Four bytes of it are not enough to judge.
  CHECK(decode(Dialect::Torch2, bytes({0x00, 0x00, 0x00, 0x00})).status == DecodeStatus::NeedMore);
}

TEST_CASE("huge lengths and counts are refused without allocating", "[store_protocol]") {
  const std::uint64_t huge = 1ull << 63;
  const std::uint64_t kAllOnes = ~std::uint64_t{0};
  for (Dialect dialect : kDialects) {
    CAPTURE(dialect);
    const std::string set = bytes({dialect == Dialect::Torch2 ? 0x01 : 0x00});
    const std::string wait = bytes({dialect == Dialect::Torch2 ? 0x06 : 0x05});
    for (std::uint64_t length : {huge, kAllOnes, huge - 1}) {
      CAPTURE(length);
      CHECK(decode(dialect, set + le64(length) + "abc").status == DecodeStatus::Invalid);                    // key
      CHECK(decode(dialect, set + wireString("k") + le64(length) + "abc").status == DecodeStatus::Invalid);  // value
      CHECK(decode(dialect, wait + le64(length) + wireString("k")).status == DecodeStatus::Invalid);         // count
    }
  }
  // With limits that allow anything, a huge length only means "need more", never a read
  // past the input or an allocation of what it claims.
  ProtocolLimits unlimited;
  unlimited.maxKeySize = ~0ull;
  unlimited.maxValueSize = ~0ull;
  unlimited.maxKeysPerRequest = ~0ull;
  unlimited.maxRequestSize = ~0ull;
  CHECK(decode(Dialect::Torch2, bytes({0x01}) + le64(huge) + "abc", unlimited).status == DecodeStatus::NeedMore);
  CHECK(decode(Dialect::Torch2, bytes({0x01}) + le64(~0ull) + "abc", unlimited).status == DecodeStatus::NeedMore);
  CHECK(decode(Dialect::Torch2, bytes({0x01}) + wireString("k") + le64(huge), unlimited).status ==
        DecodeStatus::NeedMore);
  CHECK(decode(Dialect::Torch2, bytes({0x0A}) + le64(huge) + wireString("k"), unlimited).status ==
        DecodeStatus::NeedMore);
  CHECK(decode(Dialect::Torch2, bytes({0x0B}) + le64(~0ull), unlimited).status == DecodeStatus::NeedMore);
}

// ---------------------------------------------------------------------------------------
// (5) Dialect detection: TCPSTORE_PROTOCOL.md §7's rule, plus pltrun's extension bytes,
// which both dialects share and so leave the dialect undecided.

TEST_CASE("detectDialect: a torch 2.x VALIDATE means Torch2", "[store_protocol]") {
  const std::string validate = bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C});
  CHECK(dialectName(detectDialect(validate)) == "Torch2");
  CHECK(dialectName(detectDialect(
            encodeRequest(Dialect::Torch2, makeRequest(Command::Validate, {}, {}, kValidationMagic)))) == "Torch2");
  // With the next request already behind it.
  CHECK(dialectName(detectDialect(validate + bytes({0x01}) + wireString("k") + wireString("v"))) == "Torch2");
}

TEST_CASE("detectDialect: a torch 1.13 first request means Torch113", "[store_protocol]") {
  // SET: byte 0, then a small u64 key length.
  CHECK(dialectName(detectDialect(bytes({0x00, 0x01, 0x00, 0x00, 0x00}))) == "Torch113");
  CHECK(dialectName(detectDialect(encodeRequest(Dialect::Torch113, makeRequest(Command::Set, {"k"}, {"v"})))) ==
        "Torch113");
  CHECK(dialectName(detectDialect(bytes({0x00, 0x00, 0x00, 0x00, 0x00}))) == "Torch113");  // SET with an empty key
  // Any other first byte below the extensions is not VALIDATE, so not 2.x: decided at once.
  for (int byte : {0x01, 0x02, 0x03, 0x05, 0x06, 0x08, 0x42, 0x9F}) {
    CAPTURE(byte);
    CHECK(dialectName(detectDialect(bytes({byte}))) == "Torch113");
  }
  CHECK(dialectName(detectDialect(encodeRequest(Dialect::Torch113, makeRequest(Command::Get, {"k"})))) == "Torch113");
}

TEST_CASE("detectDialect: undecided for extensions and short starts", "[store_protocol]") {
  CHECK(dialectName(detectDialect("")) == "undecided");
  for (int byte : {0xA0, 0xA1, 0xA2, 0xA3}) {
    CAPTURE(byte);
    CHECK(dialectName(detectDialect(bytes({byte}))) == "undecided");
    CHECK(dialectName(detectDialect(bytes({byte}) + std::string(40, '\x01'))) == "undecided");
  }
  CHECK(dialectName(detectDialect(encodeRequest(Dialect::Torch2, makeRequest(Command::AuthHello, {"r"}, {kProof})))) ==
        "undecided");
  // Byte 0 followed by fewer than four bytes: VALIDATE or a 1.13 SET, cannot tell yet.
  const std::string validate = bytes({0x00, 0xCE, 0xF7, 0x85, 0x3C});
  for (size_t length = 1; length < 5; ++length) {
    CAPTURE(length);
    CHECK(dialectName(detectDialect(validate.substr(0, length))) == "undecided");
    CHECK(dialectName(detectDialect(std::string(length, '\0'))) == "undecided");
  }
}

// ---------------------------------------------------------------------------------------
// (6) Which commands are answered

TEST_CASE("hasReply: SET, SET_EPHEMERAL, ON_CLOSE_SET, APPEND, MULTI_SET and VALIDATE are not answered",
          "[store_protocol]") {
  for (Command command : {Command::Validate, Command::Set, Command::SetEphemeral, Command::OnCloseSet, Command::Append,
                          Command::MultiSet}) {
    CAPTURE(command);
    CHECK_FALSE(hasReply(command));
  }
  for (Command command : {Command::CompareSet, Command::Get, Command::Add, Command::Check, Command::Wait,
                          Command::GetNumKeys, Command::DeleteKey, Command::MultiGet, Command::CancelWait,
                          Command::Ping, Command::AuthHello, Command::AuthProof}) {
    CAPTURE(command);
    CHECK(hasReply(command));
  }
}

TEST_CASE("commandName names every command as torch does", "[store_protocol]") {
  const std::pair<Command, const char*> names[] = {
      {Command::Validate, "VALIDATE"},
      {Command::Set, "SET"},
      {Command::CompareSet, "COMPARE_SET"},
      {Command::Get, "GET"},
      {Command::Add, "ADD"},
      {Command::Check, "CHECK"},
      {Command::Wait, "WAIT"},
      {Command::GetNumKeys, "GETNUMKEYS"},
      {Command::WatchKey, "WATCH_KEY"},
      {Command::DeleteKey, "DELETE_KEY"},
      {Command::Append, "APPEND"},
      {Command::MultiGet, "MULTI_GET"},
      {Command::MultiSet, "MULTI_SET"},
      {Command::CancelWait, "CANCEL_WAIT"},
      {Command::Ping, "PING"},
      {Command::QueuePush, "QUEUE_PUSH"},
      {Command::QueuePop, "QUEUE_POP"},
      {Command::QueueLen, "QUEUE_LEN"},
      {Command::ListKeys, "LIST_KEYS"},
      {Command::Barrier, "BARRIER"},
      {Command::AuthHello, "AUTH_HELLO"},
      {Command::AuthProof, "AUTH_PROOF"},
      {Command::SetEphemeral, "SET_EPHEMERAL"},
      {Command::OnCloseSet, "ON_CLOSE_SET"},
  };
  for (const auto& [command, name] : names) CHECK(std::string(commandName(command)) == name);
}

// ---------------------------------------------------------------------------------------
// (7) Reply pieces

TEST_CASE("append helpers write little-endian integers and length-prefixed bytes", "[store_protocol]") {
  std::string out;
  SECTION("appendU8") {
    appendU8(out, 0xAB);
    appendU8(out, 0x00);
    CHECK(hex(out) == "ab 00");
  }
  SECTION("appendU32") {
    appendU32(out, 0x01020304);
    CHECK(hex(out) == "04 03 02 01");
    out.clear();
    appendU32(out, kValidationMagic);
    CHECK(hex(out) == "ce f7 85 3c");
  }
  SECTION("appendI64") {
    appendI64(out, -1);
    CHECK(hex(out) == "ff ff ff ff ff ff ff ff");
    out.clear();
    appendI64(out, -2);
    CHECK(hex(out) == "fe ff ff ff ff ff ff ff");
    out.clear();
    appendI64(out, 0x0102030405060708ll);
    CHECK(hex(out) == "08 07 06 05 04 03 02 01");
    out.clear();
    appendI64(out, INT64_MIN);
    CHECK(hex(out) == "00 00 00 00 00 00 00 80");
  }
  SECTION("appendU64") {
    appendU64(out, 1ull << 63);
    CHECK(hex(out) == "00 00 00 00 00 00 00 80");
    out.clear();
    appendU64(out, 300);
    CHECK(hex(out) == "2c 01 00 00 00 00 00 00");
  }
  SECTION("appendBytes") {
    appendBytes(out, "ab");
    CHECK(hex(out) == "02 00 00 00 00 00 00 00 61 62");
    out.clear();
    appendBytes(out, std::string("\0x\0", 3));
    CHECK(hex(out) == "03 00 00 00 00 00 00 00 00 78 00");
    out.clear();
    appendBytes(out, "");
    CHECK(hex(out) == "00 00 00 00 00 00 00 00");
  }
  SECTION("pieces append after what is already there") {
    out = "X";
    appendU8(out, kCheckReady);
    appendU32(out, 7);
    appendI64(out, 5);
    appendU64(out, 6);
    appendBytes(out, "z");
    CHECK(hex(out) == "58 00 07 00 00 00 05 00 00 00 00 00 00 00 06 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 7a");
  }
}

TEST_CASE("reply constants have torch's values", "[store_protocol]") {
  CHECK(kValidationMagic == 0x3C85F7CEu);
  CHECK(int(kCheckReady) == 0);
  CHECK(int(kCheckNotReady) == 1);
  CHECK(int(kWaitStop) == 0);
  CHECK(int(kWaitCanceled) == 1);
  CHECK(kAuthDigestSize == 32);
}

TEST_CASE("a request whose fields together pass maxRequestSize is refused before it arrives", "[store_protocol]") {
  ProtocolLimits limits;
  limits.maxValueSize = 1000;
  limits.maxRequestSize = 1500;
  // Each value is within maxValueSize, but two of them are not within maxRequestSize: the
  // decoder says so from the declared lengths, without waiting for the bytes.
  std::string multiSet = bytes({0x0B}) + le64(2) + wireString("a") + le64(900);
  CHECK(decode(Dialect::Torch2, multiSet, limits).status == DecodeStatus::NeedMore);
  multiSet += std::string(900, 'x') + wireString("b") + le64(900);
  DecodeResult refused = decode(Dialect::Torch2, multiSet, limits);
  CHECK(refused.status == DecodeStatus::Invalid);
  CHECK_THAT(refused.error, Catch::Contains("1500"));
  // One value of 900 bytes fits.
  CHECK(decode(Dialect::Torch2, bytes({0x01}) + wireString("k") + wireString(std::string(900, 'v')), limits).status ==
        DecodeStatus::Complete);
}

// ---------------------------------------------------------------------------------------
// RequestMeasure: the server's incremental measure of a request arriving in pieces

namespace {

// Feeds `wire` to one RequestMeasure `step` bytes more at a time, as reads would deliver it.
DecodeStatus measureInPieces(Dialect dialect, const std::string& wire, size_t step, RequestMeasure& measure) {
  DecodeStatus status = DecodeStatus::NeedMore;
  for (size_t length = std::min(step, wire.size());; length = std::min(length + step, wire.size())) {
    status = measure.advance(dialect, std::string_view(wire).substr(0, length));
    if (status != DecodeStatus::NeedMore || length == wire.size()) return status;
  }
}

}  // namespace

TEST_CASE("RequestMeasure agrees with decodeRequest on every request, fed in any piece size", "[store_protocol]") {
  for (Dialect dialect : kDialects) {
    for (const Request& request : requestsFor(dialect)) {
      const std::string wire = encodeRequest(dialect, request) + "trailing request bytes";
      const DecodeResult decoded = decode(dialect, wire);
      for (size_t step : {size_t(1), size_t(3), size_t(8), size_t(64), wire.size()}) {
        CAPTURE(dialect, request.command, step);
        RequestMeasure measure(kDefaultLimits);
        CHECK(measureInPieces(dialect, wire, step, measure) == decoded.status);
        CHECK(measure.length() == decoded.consumed);
        // A final status repeats, whatever comes after.
        CHECK(measure.advance(dialect, wire) == decoded.status);
      }
    }
  }
}

TEST_CASE("RequestMeasure: a MULTI_SET of many pairs, byte by byte, ends exactly where it should", "[store_protocol]") {
  std::vector<std::string> keys, values;
  for (int i = 0; i < 2000; ++i) {
    keys.push_back("k" + std::to_string(i));
    values.push_back(std::string(static_cast<size_t>(i % 7), 'v'));
  }
  const std::string wire = encodeRequest(Dialect::Torch2, makeRequest(Command::MultiSet, keys, values));
  RequestMeasure measure(kDefaultLimits);
  for (size_t length = 0; length < wire.size(); ++length) {
    REQUIRE(measure.advance(Dialect::Torch2, std::string_view(wire).substr(0, length)) == DecodeStatus::NeedMore);
  }
  CHECK(measure.advance(Dialect::Torch2, wire + "next") == DecodeStatus::Complete);
  CHECK(measure.length() == wire.size());
}

TEST_CASE("RequestMeasure refuses over-limit sizes as the headers arrive, with decodeRequest's words",
          "[store_protocol]") {
  ProtocolLimits limits = kDefaultLimits;
  limits.maxKeysPerRequest = 4;
  limits.maxValueSize = 10;
  SECTION("too many keys: refused on the count, before any key is there") {
    std::string wire = encodeRequest(Dialect::Torch2, makeRequest(Command::MultiGet, {"a", "b", "c", "d", "e"}, {}));
    RequestMeasure measure(limits);
    CHECK(measure.advance(Dialect::Torch2, std::string_view(wire).substr(0, 9)) == DecodeStatus::Invalid);
    CHECK(measure.error() == decode(Dialect::Torch2, wire, limits).error);
  }
  SECTION("a value too large: refused on its length, before its bytes") {
    std::string wire = encodeRequest(Dialect::Torch2, makeRequest(Command::Set, {"k"}, {std::string(11, 'x')}));
    RequestMeasure measure(limits);
    CHECK(measure.advance(Dialect::Torch2, std::string_view(wire).substr(0, 1 + 9 + 8)) == DecodeStatus::Invalid);
    CHECK(measure.error() == decode(Dialect::Torch2, wire, limits).error);
  }
  SECTION("an unknown command byte") {
    RequestMeasure measure(limits);
    CHECK(measure.advance(Dialect::Torch113, "\x20") == DecodeStatus::Invalid);
    CHECK(measure.error() == decode(Dialect::Torch113, "\x20", limits).error);
  }
}

TEST_CASE("before authentication only a small AUTH_HELLO is whole: a long context is refused on its length",
          "[store_protocol][auth]") {
  const std::string hello = encodeRequest(Dialect::Torch2, makeRequest(Command::AuthHello, {"run-7"}, {kProof}));
  CHECK(decodeRequest(Dialect::Torch2, hello, kBeforeAuthenticationLimits).status == DecodeStatus::Complete);

  // The context's length says 2 KiB: refused with only the header seen, nothing buffered.
  const std::string longContext = bytes({0xA0}) + kProof + bytes({0x00, 0x08, 0, 0, 0, 0, 0, 0});
  const DecodeResult refused = decodeRequest(Dialect::Torch2, longContext, kBeforeAuthenticationLimits);
  CHECK(refused.status == DecodeStatus::Invalid);
  // The same bytes are only incomplete under the limits of an authenticated connection.
  CHECK(decodeRequest(Dialect::Torch2, longContext, ProtocolLimits{}).status == DecodeStatus::NeedMore);
}
