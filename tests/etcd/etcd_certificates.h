#pragma once
// Certificates for etcd over TLS in the tests, made by Debian's openssl in a directory the
// test owns: a CA, a server certificate for 127.0.0.1 and a client certificate, both signed
// by it (P-256 keys: quick to make, and Go's TLS takes them). The server's may act as a
// client too: etcd's gateway dials its own gRPC server with it.

#include <string>

#include "etcd/etcd_cluster.h"

namespace pltrun::test {

struct TestCertificates {
  /// Makes them in `dir`, their file names starting with `name`; throws when openssl fails.
  TestCertificates(const std::string& dir, const std::string& name);

  std::string caFile;
  std::string serverCert;
  std::string serverKey;
  std::string clientCert;
  std::string clientKey;
};

/// Members that serve https only to clients with a certificate `certificates`' CA signed,
/// and the fixture's own client options to reach them with one.
EtcdClusterOptions httpsWithClientCertificates(const TestCertificates& certificates);

}  // namespace pltrun::test
