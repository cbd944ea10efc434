// Host lists: --hosts text, the hostfile dialects of horovod, Open MPI and DeepSpeed, and
// DeepSpeed's --include/--exclude narrowing.

#include "launcher/plan/host_list.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "helpers/temp_dir.h"
#include "launcher/command_line/process_inputs.h"
#include "pltrun/error.h"

using namespace pltrun;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

using Devices = std::vector<int>;

// host:slots[devices] per entry, for one-line comparisons.
std::string describe(const std::vector<HostSlots>& hosts) {
  std::string text;
  for (const HostSlots& entry : hosts) {
    if (!text.empty()) text += " ";
    text += entry.host + ":" + std::to_string(entry.slots);
    if (!entry.devices.empty()) {
      text += "[";
      for (size_t i = 0; i < entry.devices.size(); ++i) text += (i ? "," : "") + std::to_string(entry.devices[i]);
      text += "]";
    }
  }
  return text;
}

std::string hostList(const std::string& text) { return describe(parseHostList(text)); }
std::string hostfile(const std::string& content) { return describe(parseHostfile(content, "hosts.txt")); }
std::string select(const std::string& hosts, const std::string& include, const std::string& exclude) {
  return describe(selectHosts(parseHostList(hosts), include, exclude));
}

// The message of the InvalidArgument error `call` throws (fails the test when it throws none).
template <typename Call>
std::string errorOf(Call call) {
  try {
    call();
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    std::string message = error.what();
    CHECK(message.find('\n') == std::string::npos);
    return message;
  }
  FAIL("no error thrown");
  return "";
}

}  // namespace

TEST_CASE("host list: --hosts takes host:slots, bare hosts and bracketed IPv6", "[hosts]") {
  CHECK(hostList("h1:4,h2:4") == "h1:4 h2:4");
  CHECK(hostList("h1,h2") == "h1:0 h2:0");
  CHECK(hostList("h1:2,h2") == "h1:2 h2:0");
  CHECK(hostList("single") == "single:0");
  CHECK(hostList("10.0.0.1:8,10.0.0.2:8") == "10.0.0.1:8 10.0.0.2:8");
  CHECK(hostList("[::1]:2") == "::1:2");
  CHECK(hostList("[fe80::1],[::1]:3") == "fe80::1:0 ::1:3");
  CHECK(hostList("h1:4,h2:4,") == "h1:4 h2:4");
  CHECK(hostList(" h1:4 , h2:1 ") == "h1:4 h2:1");
  CHECK(hostList("h1:4096") == "h1:4096");
  CHECK(hostList("node-01.cluster.local:1") == "node-01.cluster.local:1");
}

TEST_CASE("host list: --hosts rejects malformed text with a one-line error", "[hosts]") {
  CHECK_THAT(errorOf([] { parseHostList("h1:4,h1:2"); }), Contains("'h1' is listed twice"));
  CHECK_THAT(errorOf([] { parseHostList("h1,h1"); }), Contains("listed twice"));
  CHECK_THAT(errorOf([] { parseHostList("h1:"); }), Contains("no slot count"));
  CHECK_THAT(errorOf([] { parseHostList("h1:0"); }), Contains("from 1 to 4096"));
  CHECK_THAT(errorOf([] { parseHostList("h1:-2"); }), Contains("from 1 to 4096"));
  CHECK_THAT(errorOf([] { parseHostList("h1:4097"); }), Contains("from 1 to 4096"));
  CHECK_THAT(errorOf([] { parseHostList("h1:x"); }), Contains("'x' is not a number"));
  CHECK_THAT(errorOf([] { parseHostList("h1:4x"); }), Contains("not a number"));
  CHECK_THAT(errorOf([] { parseHostList(":4"); }), Contains("empty host name"));
  CHECK_THAT(errorOf([] { parseHostList(""); }), Contains("no host given"));
  CHECK_THAT(errorOf([] { parseHostList("  "); }), Contains("no host given"));
  CHECK_THAT(errorOf([] { parseHostList(","); }), Contains("empty host"));
  CHECK_THAT(errorOf([] { parseHostList("h1,,h2"); }), Contains("empty host between commas"));
  CHECK_THAT(errorOf([] { parseHostList("h 1:4"); }), Contains("has a space"));
  CHECK_THAT(errorOf([] { parseHostList("h1\t2"); }), Contains("has a space"));
  CHECK_THAT(errorOf([] { parseHostList("::1:2"); }), Contains("brackets"));
  CHECK_THAT(errorOf([] { parseHostList("[::1:2"); }), Contains("'[' without ']'"));
  CHECK_THAT(errorOf([] { parseHostList("[::1]x"); }), Contains("after ']'"));
  CHECK_THAT(errorOf([] { parseHostList("[]:2"); }), Contains("empty host name"));
  CHECK_THAT(errorOf([] { parseHostList("a@b:2"); }), Contains("'@'"));
  // Host names reach ssh's argv and the remote shell: no option, no shell syntax.
  CHECK_THAT(errorOf([] { parseHostList("-oProxyCommand"); }), Contains("starts with '-'"));
  CHECK_THAT(errorOf([] { parseHostList("a;b"); }), Contains("has a ';'"));
  CHECK_THAT(errorOf([] { parseHostList("h$(id):2"); }), Contains("has a '$'"));
  CHECK_THAT(errorOf([] { parseHostList("`x`"); }), Contains("has a '`'"));
  CHECK_THAT(errorOf([] { parseHostList("h|x"); }), Contains("has a '|'"));
  CHECK(parseHostList("[fe80::1%eth0]:2").front().host == "fe80::1%eth0");
  CHECK(parseHostList("node_7.cluster-a:2").front().host == "node_7.cluster-a");
  CHECK_THAT(errorOf([] {
               parseHostList("h1:4");
               parseHostList("bad:");
             }),
             StartsWith("--hosts: "));
}

TEST_CASE("Hostfiles read every dialect", "[hosts]") {
  SECTION("DeepSpeed and Open MPI: host slots=N") {
    CHECK(hostfile("worker-0 slots=4\nworker-1 slots=4\n") == "worker-0:4 worker-1:4");
    CHECK(hostfile("a slots = 2\nb slots =3\nc slots= 1\n") == "a:2 b:3 c:1");
    CHECK(hostfile("a slots=2 max_slots=8\nb max-slots=4 slots=1\n") == "a:2 b:1");
  }
  SECTION("horovod: host:N, and bare hosts") {
    CHECK(hostfile("h1:4\nh2:2") == "h1:4 h2:2");
    CHECK(hostfile("h1\nh2\n") == "h1:0 h2:0");
    CHECK(hostfile("[::1]:2\n[fe80::2] slots=3\n") == "::1:2 fe80::2:3");
  }
  SECTION("comments, blank lines, CRLF and tabs") {
    const std::string content =
        "# cluster A\r\n"
        "\r\n"
        "   \t \n"
        "h1 slots=4   # the big one\r\n"
        "\th2\tslots=2\t\r\n"
        "h3:1#no space before the comment\n"
        "  # indented comment\n"
        "h4";
    CHECK(hostfile(content) == "h1:4 h2:2 h3:1 h4:0");
  }
  SECTION("the order of the file is kept") { CHECK(hostfile("z\ny\nx\n") == "z:0 y:0 x:0"); }
  SECTION("Open MPI and PBS: a host on several lines adds up its slots, a bare line being one") {
    // $PBS_NODEFILE: one line per slot, in the order of the first appearance.
    CHECK(hostfile("n2\nn1\nn2\nn1\nn2\n") == "n2:3 n1:2");
    CHECK(hostfile("h1 slots=2\nh2 slots=1\nh1 slots=3\n") == "h1:5 h2:1");
    CHECK(hostfile("h1\n\n# c\nh1 slots=2\n") == "h1:3");
    CHECK(hostfile("h1:2\nh1\n") == "h1:3");
  }
}

TEST_CASE("Hostfile errors name the file and the line", "[hosts]") {
  auto error = [](const std::string& content) { return errorOf([&] { parseHostfile(content, "hosts.txt"); }); };
  CHECK_THAT(error("h1 slots=4\nh2 foo\n"), StartsWith("hostfile hosts.txt:2: 'h2 foo'") && Contains("key=value"));
  CHECK_THAT(error("h1 slots=4000\nh1 slots=97\n"), Contains("hosts.txt:2") && Contains("more than 4096 slots"));
  CHECK_THAT(error("h1 slots=\n"), Contains("hosts.txt:1") && Contains("no slot count"));
  CHECK_THAT(error("h1 slots\n"), Contains("hosts.txt:1") && Contains("'slots' is not a key=value"));
  CHECK_THAT(error("h1 slots=0\n"), Contains("from 1 to 4096"));
  CHECK_THAT(error("h1 slots=-1\n"), Contains("from 1 to 4096"));
  CHECK_THAT(error("h1 slots=5000\n"), Contains("from 1 to 4096"));
  CHECK_THAT(error("h1 slots=four\n"), Contains("'four' is not a number"));
  CHECK_THAT(error("h1 slots=2 slots=3\n"), Contains("slots are given twice"));
  CHECK_THAT(error("h1:2 slots=3\n"), Contains("slots are given twice"));
  CHECK_THAT(error("h1:\n"), Contains("no slot count"));
  CHECK_THAT(error("h1 =4\n"), Contains("'=' without a key"));
  CHECK_THAT(error("h1 max_slots=\n"), Contains("'max_slots=' has no value"));
  CHECK_THAT(error("::1 slots=2\n"), Contains("brackets"));
  CHECK_THAT(error("h1\r\nh2 junk\r\n"), Contains("hosts.txt:2: 'h2 junk'"));
  CHECK_THAT(error(""), Contains("hosts.txt names no host"));
  CHECK_THAT(error("# only comments\n\n   \n"), Contains("names no host"));
}

TEST_CASE("readHostfile reads a file and names a missing one", "[hosts]") {
  namespace fs = std::filesystem;
  const pltrun::test::TempDir temp("pltrun-hosts");
  const fs::path dir = temp.path();
  const fs::path file = dir / "hostfile";
  {
    std::ofstream out(file);
    out << "a slots=2\nb:1\n";
  }
  CHECK(describe(readHostfile(file.string(), readFileFromDisk)) == "a:2 b:1");
  {
    std::ofstream out(file);
    out << "a\nb bogus\n";
  }
  CHECK_THAT(errorOf([&] { readHostfile(file.string(), readFileFromDisk); }), Contains(file.string() + ":2"));
  const std::string missing = (dir / "missing").string();
  CHECK_THAT(errorOf([&] { readHostfile(missing, readFileFromDisk); }), Contains("cannot read hostfile " + missing));
  CHECK_THAT(errorOf([&] { readHostfile(dir.string(), readFileFromDisk); }), Contains("is a directory"));
}

TEST_CASE("readHostfile reads through the reader it is given", "[hosts]") {
  auto reader = [](const std::string& path) -> std::string {
    if (path == "in-memory") return "a slots=2\nb:1\n";
    throw FileReadError(FileReadError::Reason::CannotRead, "Input/output error");
  };
  CHECK(describe(readHostfile("in-memory", reader)) == "a:2 b:1");
  CHECK(errorOf([&] { readHostfile("/dev/broken", reader); }) ==
        "cannot read hostfile /dev/broken: Input/output error");
}

TEST_CASE("host selection: --include keeps only the hosts and slots it names", "[hosts]") {
  CHECK(select("h1:4,h2:4,h3:4", "", "") == "h1:4 h2:4 h3:4");
  CHECK(select("h1:4,h2:4,h3:4", "h1", "") == "h1:4");
  CHECK(select("h1:4,h2:4,h3:4", "h3@h1", "") == "h1:4 h3:4");  // the host list's order
  CHECK(select("h1:4,h2:4", "h1@h2:0,2", "") == "h1:4 h2:2[0,2]");
  CHECK(select("h1:4,h2:4", "h2:3,1", "") == "h2:2[1,3]");
  CHECK(select("h1:4,h2:4", "h2:1,1", "") == "h2:1[1]");
  CHECK(select("h1:4,h2:4", "h2:0@h2:3", "") == "h2:2[0,3]");  // named twice: the union
  CHECK(select("h1:4,h2:4", "h2:0@h2", "") == "h2:4");         // the whole host wins
  CHECK(select("h1,h2", "h2:0,5", "") == "h2:2[0,5]");         // slots unknown: taken as is
  CHECK(select("h1,h2", "h1", "") == "h1:0");
  CHECK(select("[::1]:2,h2:1", "[::1]:1", "") == "::1:1[1]");
  CHECK(select("h1:4,h2:4", " h1 @ h2:0 ", "") == "h1:4 h2:1[0]");
}

TEST_CASE("host selection: --exclude removes whole hosts or slots", "[hosts]") {
  CHECK(select("h1:4,h2:4,h3:4", "", "h2") == "h1:4 h3:4");
  CHECK(select("h1:4,h2:4", "", "h2:1") == "h1:4 h2:3[0,2,3]");
  CHECK(select("h1:4,h2:4", "", "h1:0,1@h2:3") == "h1:2[2,3] h2:3[0,1,2]");
  CHECK(select("h1:4,h2:2", "", "h2:0,1") == "h1:4");  // no slot left: dropped
  CHECK(select("h1,h2:2", "", "h1") == "h2:2");
  // Narrowing what an earlier --include chose.
  auto chosen = selectHosts(parseHostList("h1:4"), "h1:0,2,3", "");
  CHECK(describe(selectHosts(chosen, "", "h1:2")) == "h1:2[0,3]");
}

TEST_CASE("host selection: --include and --exclude errors", "[hosts]") {
  const std::string hosts = "h1:4,h2:4";
  auto error = [&](const std::string& include, const std::string& exclude) {
    return errorOf([&] { selectHosts(parseHostList(hosts), include, exclude); });
  };
  CHECK_THAT(error("h1", "h2"), Contains("cannot be used together"));
  CHECK_THAT(error("h9", ""), StartsWith("--include: ") && Contains("'h9' is not in the host list (h1, h2)"));
  CHECK_THAT(error("", "h9"), StartsWith("--exclude: ") && Contains("not in the host list"));
  CHECK_THAT(error("h1:4", ""), Contains("host 'h1' has no slot 4 (its slots: 0,1,2,3)"));
  CHECK_THAT(error("", "h2:7"), Contains("has no slot 7"));
  CHECK_THAT(error("h1:-1", ""), Contains("slot index '-1'"));
  CHECK_THAT(error("h1:a", ""), Contains("slot index 'a'"));
  CHECK_THAT(error("h1:", ""), Contains("slot index ''"));
  CHECK_THAT(error("h1:0,,1", ""), Contains("slot index ''"));
  CHECK_THAT(error("h1@", ""), Contains("empty host name around '@'"));
  CHECK_THAT(error("@h1", ""), Contains("empty host name around '@'"));
  CHECK_THAT(error("h1@@h2", ""), Contains("empty host name"));
  CHECK_THAT(error("", "h1@h2"), Contains("removes every host"));
  CHECK_THAT(error("", "h1:0,1,2,3@h2"), Contains("removes every host"));
  CHECK_THAT(errorOf([] { selectHosts(parseHostList("h1,h2"), "", "h1:0"); }),
             Contains("'h1' has no slot count") && Contains("exclude the whole host"));
  CHECK_THAT(errorOf([] { selectHosts(parseHostList("h1"), "::1:0", ""); }), Contains("brackets"));
}

TEST_CASE("host selection for -np: the first N slots in host order", "[hosts]") {
  CHECK(describe(firstSlots(parseHostList("a:2,b:2,c:4"), 3)) == "a:2 b:1");
  CHECK(describe(firstSlots(parseHostList("a:2,b:2"), 4)) == "a:2 b:2");
  // Slots chosen with --include: the first chosen indices are kept.
  const auto chosen = firstSlots(selectHosts(parseHostList("a:4,b:4"), "a:1,3@b", ""), 3);
  REQUIRE(chosen.size() == 2);
  CHECK(chosen[0].devices == std::vector<int>{1, 3});
  CHECK(chosen[1].slots == 1);
  CHECK_THAT(errorOf([] { firstSlots(parseHostList("a:2"), 3); }), Contains("offer 2 slots"));
  CHECK_THAT(errorOf([] { firstSlots(parseHostList("a,b"), 1); }), Contains("needs every host's slot count"));
}
