// etcd over TLS (--rdzv-conf protocol=https, cacert, cert, key): a member started with a
// certificate for 127.0.0.1 and --client-cert-auth, certificates made by openssl for the
// test. The client, a watch and EtcdStore over https; and the one-line errors for a
// certificate another CA signed, a missing client certificate, a CA file that cannot be
// read, and http and https mixed up.

#include <catch2/catch.hpp>

#include "etcd/etcd_certificates.h"
#include "etcd/etcd_cluster.h"
#include "helpers/temp_dir.h"
#include "pltrun/error.h"
#include "rendezvous/etcd/etcd_store.h"

using namespace pltrun;
using namespace pltrun::test;
using namespace std::chrono_literals;
using etcd::EtcdClient;

namespace {

// One member over https, and the client options that reach it.
struct TlsMember {
  TempDir dir;
  TestCertificates certificates{dir.path(), "good"};
  EtcdCluster cluster{1, [this] {
                        EtcdClusterOptions options = httpsWithClientCertificates(certificates);
                        options.client.timeout = 2s;
                        return options;
                      }()};
};

// The error a first request with `options` meets.
Error firstError(const etcd::EtcdClientOptions& options) {
  try {
    EtcdClient(options).get("/k");
  } catch (const Error& error) {
    return error;
  }
  FAIL("the request succeeded");
  return Error(ErrorCode::System, "");
}

}  // namespace

TEST_CASE("etcd over TLS: requests, watches and EtcdStore with a client certificate", "[etcd][tls]") {
  TlsMember member;
  const etcd::EtcdClientOptions options = member.cluster.clientOptions();
  EtcdClient client(options);
  const std::int64_t before = client.range("/tls/k").revision;
  client.put("/tls/k", "over https");
  CHECK(client.get("/tls/k")->value == "over https");
  const etcd::WatchMessage message = client.watch("/tls/k", "", before + 1, 5s);
  REQUIRE(message.events.size() == 1);
  CHECK(message.events[0].kv.value == "over https");

  etcd::EtcdStoreOptions storeOptions;
  storeOptions.client = options;
  storeOptions.keyPrefix = "/store/";
  storeOptions.leaseTtl = 2s;
  etcd::EtcdStore store(storeOptions);
  auto other = store.connect();
  store.setEphemeral("alive", "1");
  CHECK(other->get("alive", 5s) == "1");
  CHECK(other->add("n", 3) == 3);
}

TEST_CASE("etcd over TLS: a member whose certificate another CA signed is refused", "[etcd][tls]") {
  TlsMember member;
  const TestCertificates other(member.dir.path(), "other");
  etcd::EtcdClientOptions options = member.cluster.clientOptions();
  options.caFile = other.caFile;
  const Error error = firstError(options);
  CHECK(error.code() == ErrorCode::Network);
  CHECK_THAT(error.what(), Catch::Contains("certificate verify failed") && Catch::Contains(other.caFile));
  CHECK(std::string(error.what()).find('\n') == std::string::npos);
}

TEST_CASE("etcd over TLS: a member that wants a client certificate says so", "[etcd][tls]") {
  TlsMember member;
  etcd::EtcdClientOptions options = member.cluster.clientOptions();
  options.certFile.clear();
  options.keyFile.clear();
  const Error error = firstError(options);
  CHECK(error.code() == ErrorCode::Network);
  CHECK_THAT(error.what(), Catch::Contains("client certificate"));
}

TEST_CASE("etcd over TLS: a CA file that cannot be read is named before any member is tried", "[etcd][tls]") {
  TempDir dir;
  etcd::EtcdClientOptions options;
  options.endpoints = {{"127.0.0.1", freeLoopbackPort()}};
  options.https = true;
  options.caFile = dir / "missing-ca.crt";
  try {
    EtcdClient client(options);
    FAIL("a client was made with a CA file that does not exist");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(error.what(), Catch::Contains("missing-ca.crt") && Catch::Contains("cacert"));
  }
}

TEST_CASE("etcd over TLS: http and https mixed up, the error says which to use", "[etcd][tls]") {
  SECTION("http to a member that serves https") {
    TlsMember member;
    etcd::EtcdClientOptions options = member.cluster.clientOptions();
    options.https = false;
    const Error error = firstError(options);
    CHECK(error.code() == ErrorCode::Network);
    CHECK_THAT(error.what(), Catch::Contains("protocol=https"));
  }
  SECTION("https to a member that serves http") {
    EtcdCluster cluster(1);
    etcd::EtcdClientOptions options = cluster.clientOptions();
    options.https = true;
    options.timeout = 2s;
    const Error error = firstError(options);
    CHECK(error.code() == ErrorCode::Network);
    CHECK_THAT(error.what(), Catch::Contains("does not serve https"));
  }
}
