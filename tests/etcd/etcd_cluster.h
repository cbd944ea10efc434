#pragma once
// Real etcd for the tests: 1 or 3 members of Debian's etcd-server on loopback, each on
// client and peer ports found free (bound to port 0 and read back: etcd's gateway cannot
// listen on port 0 itself), data in a temporary directory, fast elections (50 ms heartbeat,
// 500 ms election timeout) so that losing the leader costs the tests about a second.
// Every member is stopped and reaped when the cluster goes away. Optionally over https with
// client certificates (tests/etcd/etcd_certificates makes them).

#include <memory>
#include <string>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"
#include "rendezvous/etcd/etcd_client.h"

namespace pltrun::test {

struct EtcdClusterOptions {
  /// Set: the members serve clients over https with this certificate and key, and accept
  /// only clients with a certificate signed by `trustedCaFile` (--client-cert-auth).
  std::string certFile;
  std::string keyFile;
  std::string trustedCaFile;
  /// How the fixture's own clients reach the members (https, CA, client certificate).
  etcd::EtcdClientOptions client;
  /// Set: the members run inside this network namespace (`ip netns exec`), on `address`
  /// there, and the fixture checks them with etcdctl run in it too.
  std::string networkNamespace;
  std::string address = "127.0.0.1";
};

class EtcdCluster {
 public:
  /// Starts `members` members and waits (up to 30 s) until each answers; starts them again
  /// on other ports when a port found free was taken before a member bound it.
  explicit EtcdCluster(int members, EtcdClusterOptions options = {});
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  std::vector<pltrun::Endpoint> endpoints() const;
  /// "HOST:PORT,...", every member: what --rdzv-endpoint takes.
  std::string endpointsText() const;
  /// options.client with every member's endpoint.
  etcd::EtcdClientOptions clientOptions() const;
  pltrun::Endpoint endpoint(int member) const;
  int size() const { return static_cast<int>(members_.size()); }
  /// The member whose client endpoint is `text` ("ADDRESS:PORT"); -1 if none.
  int memberAt(const std::string& text) const;

  /// SIGKILL, and reaped: the member is gone until restart().
  void kill(int member);
  /// Starts a killed member again on its data and ports (without waiting: a member of a
  /// cluster without quorum answers only once enough others are back).
  void restart(int member);
  /// Waits (up to 30 s) until `member` answers a linearizable read.
  void waitUntilAnswering(int member);
  /// SIGSTOP / SIGCONT: a member that is there but answers nothing (a hung host).
  void stop(int member);
  void resume(int member);
  /// The member's stderr so far (etcd logs there), for a failing test's message.
  std::string log(int member) const;

 private:
  struct Member {
    std::string name;
    int clientPort = 0;
    int peerPort = 0;
    std::unique_ptr<ChildProcess> process;
  };
  void start(int member);
  void stopAll();
  std::string clientUrl(int port) const;
  std::string peerUrl(int port) const;
  /// Whether `member` answers a linearizable read now; `why` says why not.
  bool answers(int member, std::string& why) const;

  TempDir dir_;
  EtcdClusterOptions options_;
  std::string initialCluster_;
  std::vector<Member> members_;
};

}  // namespace pltrun::test
