#include "rendezvous/etcd/etcd_tls.h"

#include <openssl/x509.h>
#include <unistd.h>

#include <cstdlib>

#include "pltrun/error.h"

namespace pltrun::etcd {

namespace {

namespace ssl = boost::asio::ssl;

void require(const boost::system::error_code& error, const std::string& what, const std::string& file) {
  if (error) {
    throw Error(ErrorCode::InvalidArgument, "etcd: cannot use " + what + " " + file + ": " + error.message() +
                                                "; check --rdzv-conf cacert, cert and key");
  }
}

// The system's CA certificates. OpenSSL looks in the directory it was built for
// (/usr/lib/ssl on Debian), which the wheel's OpenSSL, compiled in, keeps on every
// distribution: RHEL and SUSE keep their bundle elsewhere. Where OpenSSL's own file is not
// there, the first bundle of the known places is loaded instead (SSL_CERT_FILE, which
// OpenSSL reads, still wins).
void loadSystemCertificates(ssl::context& context) {
  boost::system::error_code error;
  context.set_default_verify_paths(error);
  require(error, "the system's", "CA certificates");
  if (std::getenv("SSL_CERT_FILE") != nullptr || access(X509_get_default_cert_file(), R_OK) == 0) return;
  static const char* const kBundles[] = {
      "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu
      "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL, Rocky, Fedora
      "/etc/pki/tls/certs/ca-bundle.crt",                   // older RHEL
      "/etc/ssl/ca-bundle.pem",                             // SUSE
  };
  for (const char* bundle : kBundles) {
    if (access(bundle, R_OK) == 0) {
      context.load_verify_file(bundle, error);
      require(error, "the system's CA bundle", bundle);
      return;
    }
  }
}

bool mentions(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

ssl::context tlsContext(const EtcdClientOptions& options) {
  ssl::context context(ssl::context::tls_client);
  boost::system::error_code error;
  if (options.caFile.empty()) {
    loadSystemCertificates(context);
  } else {
    context.load_verify_file(options.caFile, error);
    require(error, "the CA file", options.caFile);
  }
  if (!options.certFile.empty()) {
    const std::string& keyFile = options.keyFile.empty() ? options.certFile : options.keyFile;
    context.use_certificate_chain_file(options.certFile, error);
    require(error, "the client certificate", options.certFile);
    context.use_private_key_file(keyFile, ssl::context::pem, error);
    require(error, "the client key", keyFile);
  }
  context.set_verify_mode(ssl::verify_peer);
  return context;
}

std::string tlsFailureCause(const std::string& reason, const EtcdClientOptions& options) {
  if (mentions(reason, "certificate verify failed")) {
    return "its certificate is not signed by " +
           (options.caFile.empty() ? std::string("a CA this system trusts") : "the CA in " + options.caFile) +
           ", or does not name the host it was reached at";
  }
  if (mentions(reason, "wrong version number") || mentions(reason, "packet length too long") ||
      mentions(reason, "record layer failure")) {
    return kServesNoHttps;  // a plain HTTP member's answer to the TLS hello
  }
  if (mentions(reason, "certificate required") || mentions(reason, "handshake failure") ||
      mentions(reason, "bad certificate") || mentions(reason, "unknown ca")) {
    return options.certFile.empty() ? "it wants a client certificate: give --rdzv-conf cert and key"
                                    : "it refused the client certificate " + options.certFile;
  }
  return "";
}

}  // namespace pltrun::etcd
