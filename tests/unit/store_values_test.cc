// Values read from the rendezvous store are untrusted: a round end of the wrong shape or type
// is an Error(Protocol) naming the field, never one of nlohmann's exceptions, and where an
// agent reads one it ends the round as a failed rendezvous naming the key. Text from the
// store or a worker that pltrun prints cannot drive the terminal.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/terminal_text.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/node_assignment.h"
#include "rendezvous/elastic/round_end.h"

using Catch::Matchers::Contains;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::terminalSafe;
using pltrun::terminalSafeLine;
using pltrun::rdzv::RoundEnd;

namespace {

ErrorCode codeOf(const std::string& text) {
  try {
    RoundEnd::fromJson(text);
  } catch (const Error& error) {
    return error.code();
  }
  FAIL("no error for " << text);
  return ErrorCode::System;
}

}  // namespace

TEST_CASE("round end: wrong types and shapes are protocol errors, not exceptions of the JSON library",
          "[store_values]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& text : std::vector<std::string>{
           R"({"reason":"worker_failed","host":5})", R"({"reason":"worker_failed","message":[]})",
           R"({"reason":"worker_failed","status":"1"})", R"({"reason":"worker_failed","final":1})",
           R"({"reason":"worker_failed","failures":{"a":1}})", R"({"reason":"worker_failed","status":300})",
           R"({"reason":"worker_failed","failures":-1})", R"({"reason":5})", R"({"reason":"nonsense"})", "[]",
           "not json", R"({"reason":"worker_failed","host":)" + deep + "}", deep}) {
    INFO(text.substr(0, 80));
    CHECK(codeOf(text) == ErrorCode::Protocol);
  }
  const RoundEnd good = RoundEnd::fromJson(R"({"reason":"worker_failed","host":"b","status":3,"final":true})");
  CHECK(good.host == "b");
  CHECK(good.status == 3);
  CHECK(good.final);
}

TEST_CASE("round end: a malformed store value ends the round as a failed rendezvous naming the key", "[store_values]") {
  const RoundEnd end = RoundEnd::fromStoreValue("pltrun/rdzv/job/r3/end", R"({"reason":"worker_failed","host":5})");
  CHECK(end.reason == RoundEnd::Reason::RendezvousFailed);
  CHECK_FALSE(end.final);
  CHECK_THAT(end.describe(), Contains("malformed value at 'pltrun/rdzv/job/r3/end'"));
  CHECK_THAT(end.describe(), Contains("bad 'host'"));
  // A good one reads as itself.
  CHECK(RoundEnd::fromStoreValue("k", R"({"reason":"node_lost","host":"b"})").reason == RoundEnd::Reason::NodeLost);
}

TEST_CASE("node descriptor and assignment: wrong types are protocol errors", "[store_values]") {
  CHECK_THROWS_AS(pltrun::rdzv::nodeDescriptorFromJson(R"({"id":1,"host":"h","addr":"a","nproc":1})"), Error);
  CHECK_THROWS_AS(pltrun::rdzv::nodeAssignmentFromJson(
                      R"({"node_rank":"0","nnodes":1,"world_size":1,"first_rank":0,"rank0_addr":"a"})"),
                  Error);
}

TEST_CASE("terminal text: escapes and bells are shown, line breaks, tabs and UTF-8 kept", "[store_values]") {
  CHECK(terminalSafe("plain text\n\tindented") == "plain text\n\tindented");
  CHECK(terminalSafe("\x1b[31mred\x07") == "\\x1b[31mred\\x07");
  CHECK(terminalSafe("caf\xc3\xa9 \xe2\x9c\x93") == "caf\xc3\xa9 \xe2\x9c\x93");  // é, a check mark
  CHECK(terminalSafe("\xff\xfe") == "\\xff\\xfe");                                // not UTF-8
  CHECK(terminalSafe("\xc2\x9b"
                     "31m") == "\\xc2\\x9b31m");  // U+009B, the C1 CSI
  CHECK(terminalSafe("\xc3") == "\\xc3");         // cut short
  CHECK(terminalSafe("\x7f\r") == "\\x7f\\x0d");
}

TEST_CASE("terminal text on one line: line breaks and tabs are shown too, so no line is forged", "[store_values]") {
  CHECK(terminalSafeLine("gpu-07") == "gpu-07");
  CHECK(terminalSafeLine("h\n[forged] line") == "h\\x0a[forged] line");
  CHECK(terminalSafeLine("a\r\tb\x1b[2J") == "a\\x0d\\x09b\\x1b[2J");
  CHECK(terminalSafeLine("caf\xc3\xa9") == "caf\xc3\xa9");  // é stays
  CHECK(terminalSafeLine("\xc2\x85") == "\\xc2\\x85");      // U+0085, the C1 next line
  CHECK(terminalSafeLine(std::string("nul\0", 4)) == "nul\\x00");
}
