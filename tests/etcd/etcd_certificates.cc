#include "etcd/etcd_certificates.h"

#include <fstream>
#include <stdexcept>
#include <vector>

#include "helpers/child_process.h"

namespace pltrun::test {

namespace {

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess process(argv);
  const Finished finished = process.wait(std::chrono::seconds(30));
  if (finished.status != 0) throw std::runtime_error("openssl " + args.front() + " failed: " + finished.err);
}

// A key and a certificate for `subject`, signed by the CA, with the extensions in `extensions`.
void signedPair(const std::string& stem, const std::string& subject, const std::string& extensions,
                const TestCertificates& ca, const std::string& caKey) {
  std::ofstream(stem + ".ext") << extensions << "\n";
  openssl({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
           stem + ".key", "-out", stem + ".csr", "-subj", subject});
  openssl({"x509", "-req", "-in", stem + ".csr", "-CA", ca.caFile, "-CAkey", caKey, "-CAcreateserial", "-out",
           stem + ".crt", "-days", "2", "-extfile", stem + ".ext"});
}

}  // namespace

TestCertificates::TestCertificates(const std::string& dir, const std::string& name) {
  const std::string stem = dir + "/" + name;
  caFile = stem + "-ca.crt";
  openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
           stem + "-ca.key", "-out", caFile, "-days", "2", "-subj", "/CN=pltrun test CA " + name});
  signedPair(stem + "-server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth",
             *this, stem + "-ca.key");
  signedPair(stem + "-client", "/CN=pltrun-test-client", "extendedKeyUsage=clientAuth", *this, stem + "-ca.key");
  serverCert = stem + "-server.crt";
  serverKey = stem + "-server.key";
  clientCert = stem + "-client.crt";
  clientKey = stem + "-client.key";
}

EtcdClusterOptions httpsWithClientCertificates(const TestCertificates& certificates) {
  EtcdClusterOptions options;
  options.certFile = certificates.serverCert;
  options.keyFile = certificates.serverKey;
  options.trustedCaFile = certificates.caFile;
  options.client.https = true;
  options.client.caFile = certificates.caFile;
  options.client.certFile = certificates.clientCert;
  options.client.keyFile = certificates.clientKey;
  return options;
}

}  // namespace pltrun::test
