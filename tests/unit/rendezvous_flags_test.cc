// The rendezvous flags' parsers: --rdzv-endpoint's forms, --nnodes ranges, --rdzv-backend
// and every --rdzv-conf key.

#include "launcher/command_line/rendezvous_flags.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <string>

#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::Endpoint;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::EtcdSettings;
using pltrun::RendezvousBackend;
using pltrun::RendezvousSettings;
using std::chrono::milliseconds;

namespace {

// Requires `action` to throw InvalidArgument with one line containing every fragment.
void requireInvalid(const std::function<void()>& action, std::initializer_list<std::string> fragments) {
  try {
    action();
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    const std::string message = error.what();
    CHECK(message.find('\n') == std::string::npos);
    for (const std::string& fragment : fragments) CHECK_THAT(message, Contains(fragment));
    return;
  }
  FAIL("accepted invalid input");
}

Endpoint endpointOf(const std::string& text, int defaultPort = 29400) {
  return pltrun::parseEndpoint("--rdzv-endpoint", text, defaultPort);
}

RendezvousSettings confOf(const std::string& text) {
  RendezvousSettings settings;
  pltrun::applyRendezvousConf(text, settings);
  return settings;
}

void requireBadConf(const std::string& text, std::initializer_list<std::string> fragments) {
  requireInvalid([&] { confOf(text); }, fragments);
}

}  // namespace

TEST_CASE("parseEndpoint: host and host:port", "[rendezvous_flags]") {
  SECTION("a name alone gets the default port") {
    Endpoint endpoint = endpointOf("node0");
    CHECK(endpoint.host == "node0");
    CHECK(endpoint.port == 29400);
  }
  SECTION("the default port is the caller's") {
    CHECK(endpointOf("node0", 1234).port == 1234);
    CHECK(endpointOf("node0", -1).port == -1);
  }
  SECTION("name:port") {
    Endpoint endpoint = endpointOf("node0.cluster.example:29500");
    CHECK(endpoint.host == "node0.cluster.example");
    CHECK(endpoint.port == 29500);
  }
  SECTION("IPv4 with and without a port") {
    CHECK(endpointOf("10.0.0.1").host == "10.0.0.1");
    Endpoint endpoint = endpointOf("10.0.0.1:1");
    CHECK(endpoint.host == "10.0.0.1");
    CHECK(endpoint.port == 1);
  }
  SECTION("port 0 and 65535 are the bounds") {
    CHECK(endpointOf("localhost:0").port == 0);
    CHECK(endpointOf("localhost:65535").port == 65535);
  }
  SECTION("names with '-' and '_'") { CHECK(endpointOf("gpu-node_7:80").host == "gpu-node_7"); }
  SECTION("spaces around the text are ignored") {
    Endpoint endpoint = endpointOf("  node1:4000 ");
    CHECK(endpoint.host == "node1");
    CHECK(endpoint.port == 4000);
  }
}

TEST_CASE("parseEndpoint: IPv6", "[rendezvous_flags]") {
  SECTION("[v6]:port") {
    Endpoint endpoint = endpointOf("[::1]:29500");
    CHECK(endpoint.host == "::1");
    CHECK(endpoint.port == 29500);
  }
  SECTION("[v6] gets the default port") {
    Endpoint endpoint = endpointOf("[fe80::1:2]");
    CHECK(endpoint.host == "fe80::1:2");
    CHECK(endpoint.port == 29400);
  }
  SECTION("a bare v6 address is all host, no port") {
    Endpoint endpoint = endpointOf("::1");
    CHECK(endpoint.host == "::1");
    CHECK(endpoint.port == 29400);
    Endpoint full = endpointOf("2001:db8::8a2e:370:7334");
    CHECK(full.host == "2001:db8::8a2e:370:7334");
    CHECK(full.port == 29400);
  }
  SECTION("embedded IPv4 and a zone") {
    CHECK(endpointOf("::ffff:10.0.0.1").host == "::ffff:10.0.0.1");
    Endpoint zoned = endpointOf("[fe80::1%eth0]:7");
    CHECK(zoned.host == "fe80::1%eth0");
    CHECK(zoned.port == 7);
  }
  SECTION("a host name in brackets") { CHECK(endpointOf("[node0]:5").host == "node0"); }
}

TEST_CASE("parseEndpoint: errors name the flag and the text", "[rendezvous_flags]") {
  SECTION("empty host") {
    for (std::string text : {"", "   ", ":29400", "[]", "[]:29400"}) {
      INFO("text '" << text << "'");
      requireInvalid([&] { endpointOf(text); }, {"--rdzv-endpoint", "'" + text + "'", "host is empty"});
    }
  }
  SECTION("bad ports") {
    for (std::string text :
         {"node:", "node:65536", "node:-1", "node:http", "node:1.5", "[::1]:", "[::1]:99999", "node: 80"}) {
      INFO("text " << text);
      requireInvalid([&] { endpointOf(text); }, {"--rdzv-endpoint", "'" + text + "'", "0..65535"});
    }
  }
  SECTION("malformed brackets and hosts") {
    for (std::string text : {"[::1", "[::1]x", "[::1]29400", "node:1:2", "no de", "node/0:80", "http://node:80",
                             "[::1]:80:90", "fe80::1%", "[a b]"}) {
      INFO("text " << text);
      requireInvalid([&] { endpointOf(text); }, {"--rdzv-endpoint", "'" + text + "'"});
    }
  }
  SECTION("the flag named is the caller's") {
    requireInvalid([] { pltrun::parseEndpoint("--other", "x:y", 1); }, {"--other", "'x:y'"});
  }
}

TEST_CASE("endpointText: what parseEndpoint reads back", "[rendezvous_flags]") {
  CHECK(pltrun::endpointText(Endpoint{"node01", 14242}) == "node01:14242");
  CHECK(pltrun::endpointText(Endpoint{"fd00::5", 1234}) == "[fd00::5]:1234");
  for (const std::string text : {"node0:29500", "10.0.0.1:1", "[::1]:29500", "[fe80::1%eth0]:7", "h:0"}) {
    INFO(text);
    Endpoint endpoint = endpointOf(text);
    Endpoint again = endpointOf(pltrun::endpointText(endpoint));
    CHECK(again.host == endpoint.host);
    CHECK(again.port == endpoint.port);
  }
}

TEST_CASE("parseNodeRange: N and MIN:MAX", "[rendezvous_flags]") {
  auto range = [](const std::string& text) { return pltrun::parseNodeRange("--nnodes", text); };
  CHECK(range("1").minNodes == 1);
  CHECK(range("1").maxNodes == 1);
  CHECK(range("4").minNodes == 4);
  CHECK(range("4").maxNodes == 4);
  CHECK(range("1:3").minNodes == 1);
  CHECK(range("1:3").maxNodes == 3);
  CHECK(range("2:2").minNodes == 2);
  CHECK(range(" 2 : 5 ").maxNodes == 5);
  CHECK(range("100000").maxNodes == 100000);
  SECTION("MIN greater than MAX names both") {
    requireInvalid([&] { range("3:2"); }, {"--nnodes", "'3:2'", "MIN 3", "MAX 2"});
  }
  SECTION("bad counts") {
    for (std::string text : {"", "0", "-1", "0:2", "1:0", "two", "1:2:3", ":2", "2:", "100001", "1:100001", "1.5"}) {
      INFO("text '" << text << "'");
      requireInvalid([&] { range(text); }, {"--nnodes", "'" + text + "'"});
    }
  }
}

TEST_CASE("parseRendezvousBackend", "[rendezvous_flags]") {
  auto backend = [](const std::string& text) { return pltrun::parseRendezvousBackend("--rdzv-backend", text); };
  CHECK(backend("static") == RendezvousBackend::Static);
  CHECK(backend("c10d") == RendezvousBackend::C10d);
  CHECK(backend("etcd") == RendezvousBackend::Etcd);
  requireInvalid([&] { backend("etcd-v2"); }, {"--rdzv-backend", "'etcd-v2'", "v2 API is gone", "use etcd"});
  requireInvalid([&] { backend("C10D"); }, {"--rdzv-backend", "'C10D'", "static, c10d or etcd"});
  requireInvalid([&] { backend("zmq"); }, {"'zmq'", "static, c10d or etcd"});
}

TEST_CASE("parseEtcdMembers: comma-separated members, 2379 by default", "[rendezvous_flags]") {
  auto members = [](const std::string& text) { return pltrun::parseEtcdMembers("--rdzv-endpoint", text); };
  const auto three = members("n1:2379, n2:12379,[::1]:2381,");
  REQUIRE(three.size() == 3);
  CHECK(three[0] == pltrun::Endpoint{"n1", 2379});
  CHECK(three[1] == pltrun::Endpoint{"n2", 12379});
  CHECK(three[2] == pltrun::Endpoint{"::1", 2381});
  CHECK(members("etcd.example") == std::vector<pltrun::Endpoint>{{"etcd.example", 2379}});
  CHECK(members("::1") == std::vector<pltrun::Endpoint>{{"::1", 2379}});
  requireInvalid([&] { members(","); }, {"--rdzv-endpoint", "etcd members"});
  requireInvalid([&] { members("n1:0"); }, {"--rdzv-endpoint", "'n1:0'", "client port"});
  requireInvalid([&] { members("n1:2379,n 2"); }, {"--rdzv-endpoint", "not a host name"});
}

TEST_CASE("applyRendezvousConf: etcd's keys", "[rendezvous_flags]") {
  const RendezvousSettings settings =
      confOf("protocol=https,cacert=/ca.pem,cert=/c.pem,key=/k.pem,etcd_prefix=/team-a,user=root,password_file=/pw");
  CHECK(settings.etcd.https);
  CHECK(settings.etcd.caFile == "/ca.pem");
  CHECK(settings.etcd.certFile == "/c.pem");
  CHECK(settings.etcd.keyFile == "/k.pem");
  CHECK(settings.etcd.prefix == "/team-a/");
  CHECK(settings.etcd.user == "root");
  CHECK(settings.etcd.passwordFile == "/pw");
  CHECK(confOf("").etcd.prefix == "/");
  CHECK_FALSE(confOf("protocol=http").etcd.https);
  requireBadConf("protocol=grpc", {"--rdzv-conf", "'protocol=grpc'", "http or https"});
  requireBadConf("etcd_prefix=jobs", {"--rdzv-conf", "'etcd_prefix=jobs'", "starting with /"});
}

TEST_CASE("applyRendezvousConf: the defaults are torchrun's", "[rendezvous_flags]") {
  RendezvousSettings settings = confOf("");
  CHECK(settings.backend == RendezvousBackend::Static);
  CHECK(settings.minNodes == 1);
  CHECK(settings.maxNodes == 1);
  CHECK(settings.endpointHost.empty());
  CHECK(settings.endpointPort == 29400);
  CHECK(settings.joinTimeout == milliseconds(600000));
  CHECK(settings.lastCallTimeout == milliseconds(30000));
  CHECK(settings.closeTimeout == milliseconds(30000));
  CHECK(settings.keepAliveInterval == milliseconds(5000));
  CHECK(settings.keepAliveMaxAttempt == 3);
  CHECK(settings.readTimeout == milliseconds(60000));
  CHECK_FALSE(settings.isHost.has_value());
  CHECK_FALSE(settings.nodeRankHint.has_value());
  CHECK(settings.localAddr.empty());
}

TEST_CASE("applyRendezvousConf: every key", "[rendezvous_flags]") {
  SECTION("the durations, in seconds") {
    RendezvousSettings settings =
        confOf("join_timeout=900,last_call_timeout=10,close_timeout=20,keep_alive_interval=2,read_timeout=45");
    CHECK(settings.joinTimeout == milliseconds(900000));
    CHECK(settings.lastCallTimeout == milliseconds(10000));
    CHECK(settings.closeTimeout == milliseconds(20000));
    CHECK(settings.keepAliveInterval == milliseconds(2000));
    CHECK(settings.readTimeout == milliseconds(45000));
  }
  SECTION("decimals") {
    RendezvousSettings settings = confOf("join_timeout=0.5,last_call_timeout=1.25,close_timeout=.1,read_timeout=3.");
    CHECK(settings.joinTimeout == milliseconds(500));
    CHECK(settings.lastCallTimeout == milliseconds(1250));
    CHECK(settings.closeTimeout == milliseconds(100));
    CHECK(settings.readTimeout == milliseconds(3000));
    CHECK(confOf("keep_alive_interval=0.001").keepAliveInterval == milliseconds(1));
    CHECK(confOf("join_timeout=4.35").joinTimeout == milliseconds(4350));  // rounded, not truncated
  }
  SECTION("timeout is join_timeout") { CHECK(confOf("timeout=120").joinTimeout == milliseconds(120000)); }
  SECTION("heartbeat_timeout is keep_alive_interval") {
    CHECK(confOf("heartbeat_timeout=7").keepAliveInterval == milliseconds(7000));
  }
  SECTION("keep_alive_max_attempt") {
    CHECK(confOf("keep_alive_max_attempt=1").keepAliveMaxAttempt == 1);
    CHECK(confOf("keep_alive_max_attempt=10").keepAliveMaxAttempt == 10);
  }
  SECTION("is_host, any case") {
    for (std::string value : {"true", "True", "TRUE", "1", "yes", "YES", "t", "y"}) {
      INFO("value " << value);
      RendezvousSettings settings = confOf("is_host=" + value);
      REQUIRE(settings.isHost.has_value());
      CHECK(*settings.isHost);
    }
    for (std::string value : {"false", "False", "0", "no", "No", "f", "n"}) {
      INFO("value " << value);
      RendezvousSettings settings = confOf("is_host=" + value);
      REQUIRE(settings.isHost.has_value());
      CHECK_FALSE(*settings.isHost);
    }
  }
  SECTION("use_libuv and store_type are accepted and change nothing") {
    RendezvousSettings settings = confOf("use_libuv=False,store_type=tcp");
    RendezvousSettings defaults;
    CHECK(settings.joinTimeout == defaults.joinTimeout);
    CHECK(settings.readTimeout == defaults.readTimeout);
    CHECK_FALSE(settings.isHost.has_value());
  }
}

TEST_CASE("applyRendezvousConf: keys not named keep their value", "[rendezvous_flags]") {
  RendezvousSettings settings;
  settings.joinTimeout = milliseconds(1234);
  settings.keepAliveMaxAttempt = 9;
  settings.isHost = true;
  settings.minNodes = 2;
  settings.maxNodes = 4;
  settings.endpointHost = "node0";
  pltrun::applyRendezvousConf("read_timeout=5", settings);
  CHECK(settings.readTimeout == milliseconds(5000));
  CHECK(settings.joinTimeout == milliseconds(1234));
  CHECK(settings.keepAliveMaxAttempt == 9);
  CHECK(settings.isHost == true);
  CHECK(settings.minNodes == 2);
  CHECK(settings.maxNodes == 4);
  CHECK(settings.endpointHost == "node0");
  CHECK(settings.lastCallTimeout == milliseconds(30000));
}

TEST_CASE("applyRendezvousConf: separators, spaces and repeats", "[rendezvous_flags]") {
  SECTION("empty items are skipped") {
    RendezvousSettings settings = confOf(",join_timeout=1,,is_host=no,");
    CHECK(settings.joinTimeout == milliseconds(1000));
    CHECK(settings.isHost == false);
    CHECK_NOTHROW(confOf(","));
    CHECK_NOTHROW(confOf(" , "));
  }
  SECTION("spaces around keys and values") {
    RendezvousSettings settings = confOf(" join_timeout = 2 , is_host= true ");
    CHECK(settings.joinTimeout == milliseconds(2000));
    CHECK(settings.isHost == true);
  }
  SECTION("the last of a repeated key wins; timeout and join_timeout are one key") {
    CHECK(confOf("join_timeout=1,join_timeout=2").joinTimeout == milliseconds(2000));
    CHECK(confOf("join_timeout=1,timeout=3").joinTimeout == milliseconds(3000));
  }
}

TEST_CASE("applyRendezvousConf: expected_hosts takes a comma list with Slurm's ranges, node_name one name",
          "[rendezvous_flags]") {
  using Names = std::vector<std::string>;
  CHECK(confOf("expected_hosts=a,b,c").expectedHosts == Names{"a", "b", "c"});
  RendezvousSettings settings = confOf("join_timeout=9,expected_hosts=gpu-[01-03,07],x.y,node_name=gpu-02,is_host=0");
  CHECK(settings.expectedHosts == Names{"gpu-01", "gpu-02", "gpu-03", "gpu-07", "x.y"});
  CHECK(settings.nodeName == "gpu-02");
  CHECK(settings.joinTimeout == milliseconds(9000));
  CHECK(settings.isHost == false);
  CHECK(confOf("expected_hosts = a , b ,").expectedHosts == Names{"a", "b"});
  requireBadConf("expected_hosts=gpu-[01-03", {"--rdzv-conf", "expected_hosts expects host names", "'[' without ']'"});
  requireBadConf("expected_hosts=gpu-[3-1]", {"runs backwards"});
  requireBadConf("expected_hosts=a,b c", {"'b c' is not one"});
  requireBadConf("node_name=x\xff", {"node_name expects a host name"});
  CHECK(confOf("expected_hosts=::1,fe80::1%eth0").expectedHosts == Names{"::1", "fe80::1%eth0"});
}

TEST_CASE("applyRendezvousConf: errors", "[rendezvous_flags]") {
  SECTION("an unknown key is named, with the accepted ones") {
    requireBadConf("bogus=1", {"--rdzv-conf", "'bogus=1'", "unknown key 'bogus'", "join_timeout", "last_call_timeout",
                               "keep_alive_max_attempt", "read_timeout", "is_host"});
    requireBadConf("join_timeout=5,Join_Timeout=5", {"unknown key 'Join_Timeout'"});
  }
  SECTION("a pair without '='") {
    requireBadConf("join_timeout", {"--rdzv-conf", "'join_timeout'", "KEY=VALUE"});
    requireBadConf("join_timeout=1;is_host=1", {"is_host"});  // ';' is no separator: a bad duration
  }
  SECTION("a missing key or value") {
    requireBadConf("=5", {"--rdzv-conf", "'=5'", "key"});
    requireBadConf("join_timeout=", {"--rdzv-conf", "'join_timeout='", "needs a value"});
  }
  SECTION("durations must be plain seconds > 0") {
    for (std::string key :
         {"join_timeout", "timeout", "last_call_timeout", "close_timeout", "keep_alive_interval", "read_timeout"}) {
      for (std::string value : {"0", "0.0", "0.0001", "-1", "abc", "5s", "1e3", "inf", "nan", "0x10", "1..2", "."}) {
        const std::string item = key + "=" + value;
        INFO(item);
        requireBadConf(item, {"--rdzv-conf", "'" + item + "'", key});
      }
    }
  }
  SECTION("keep_alive_max_attempt must be a positive integer") {
    for (std::string value : {"0", "-1", "1.5", "x", "3x"}) {
      const std::string item = "keep_alive_max_attempt=" + value;
      INFO(item);
      requireBadConf(item, {"--rdzv-conf", "'" + item + "'", "positive integer"});
    }
  }
  SECTION("is_host must be a boolean") {
    for (std::string value : {"maybe", "2", "on"}) {
      const std::string item = "is_host=" + value;
      INFO(item);
      requireBadConf(item, {"--rdzv-conf", "'" + item + "'", "true or false"});
    }
  }
  SECTION("a bad item after good ones leaves the error naming that item") {
    requireBadConf("join_timeout=5,close_timeout=never", {"'close_timeout=never'"});
  }
}

TEST_CASE("applyRendezvousConf: one pair of quotes around the whole value is taken off, as torchrun reads it",
          "[rendezvous_flags]") {
  // `--rdzv-conf='join_timeout=5,last_call_timeout=1'` with the quotes inside the argument.
  for (const std::string quoted : {"'join_timeout=5,last_call_timeout=1'", "\"join_timeout=5,last_call_timeout=1\""}) {
    const RendezvousSettings settings = confOf(quoted);
    CHECK(settings.joinTimeout == milliseconds(5000));
    CHECK(settings.lastCallTimeout == milliseconds(1000));
  }
  // A quote anywhere else is still not a key pltrun knows: a typo torchrun would ignore.
  requireBadConf("'join_timeout=5", {"--rdzv-conf", "'join_timeout"});
  requireBadConf("join_timeout=5,'last_call_timeout=1'", {"--rdzv-conf", "'last_call_timeout"});
}

TEST_CASE("applyRendezvousConf: a value holds commas where no KEY= follows them, and anything in quotes",
          "[rendezvous_flags]") {
  RendezvousSettings settings = confOf("secret_file=/run/a,b/secret,join_timeout=5");
  CHECK(settings.secretFile == "/run/a,b/secret");
  CHECK(settings.joinTimeout == milliseconds(5000));
  settings = confOf("join_timeout=5,secret_file=\"/run/x,y=z \\\"q\\\" \\\\\"");
  CHECK(settings.secretFile == "/run/x,y=z \"q\" \\");
  CHECK(confOf("secret_file=/s/trailing,").secretFile == "/s/trailing");
  requireBadConf("secret_file=\"/s\"x", {"--rdzv-conf", "closing quote"});
  requireBadConf("secret_file=\"/s", {"--rdzv-conf", "closing quote"});
}

TEST_CASE("rendezvousConfText: a secret_file with commas, quotes or blanks reads back whole", "[rendezvous_flags]") {
  for (const std::string path : {"/p/a,b", "/p/a,b=c", "/p/a,,", "/p/\"q\"\\", " /p/blank ", "/p/plain"}) {
    CAPTURE(path);
    RendezvousSettings written;
    written.secretFile = path;
    written.expectedHosts = {"a", "b"};
    const std::string text = pltrun::rendezvousConfText(written);
    RendezvousSettings read;
    pltrun::applyRendezvousConf(text, read);
    CHECK(read.secretFile == path);
    CHECK(read.expectedHosts == written.expectedHosts);
  }
  CHECK(pltrun::rendezvousConfPair("secret_file", "/p/plain,x") == "secret_file=/p/plain,x");  // as before
  CHECK(pltrun::rendezvousConfPair("secret_file", "/p/a,b=c") == "secret_file=\"/p/a,b=c\"");
}

TEST_CASE("applyRendezvousConf: store_type and use_libuv are checked, not ignored", "[rendezvous_flags]") {
  confOf("store_type=tcp,use_libuv=false");
  confOf("use_libuv=1");
  requireBadConf("store_type=file", {"--rdzv-conf", "store_type=file", "not supported"});
  requireBadConf("use_libuv=maybe", {"--rdzv-conf", "use_libuv expects true or false"});
}
