#include "etcd/etcd_cluster.h"

#include <signal.h>

#include <stdexcept>
#include <thread>

namespace pltrun::test {

namespace {

using namespace std::chrono_literals;

std::string url(int port) { return "http://127.0.0.1:" + std::to_string(port); }

}  // namespace

EtcdCluster::EtcdCluster(int members, EtcdClusterOptions options) : options_(std::move(options)) {
  for (int index = 0; index < members; ++index) {
    Member member;
    member.name = "m" + std::to_string(index);
    member.clientPort = freeLoopbackPort();
    member.peerPort = freeLoopbackPort();
    initialCluster_ += (index ? "," : "") + member.name + "=" + url(member.peerPort);
    members_.push_back(std::move(member));
  }
  for (int index = 0; index < members; ++index) start(index);
  for (int index = 0; index < members; ++index) waitUntilAnswering(index);
}

EtcdCluster::~EtcdCluster() {
  for (Member& member : members_) {
    if (!member.process) continue;
    member.process->signal(SIGTERM);
    member.process->wait(10s);
  }
}

void EtcdCluster::start(int index) {
  Member& member = members_.at(index);
  std::vector<std::string> argv = {ETCD_BINARY,
                                   "--name",
                                   member.name,
                                   "--data-dir",
                                   dir_ / member.name,
                                   "--listen-client-urls",
                                   clientUrl(member.clientPort),
                                   "--advertise-client-urls",
                                   clientUrl(member.clientPort),
                                   "--listen-peer-urls",
                                   url(member.peerPort),
                                   "--initial-advertise-peer-urls",
                                   url(member.peerPort),
                                   "--initial-cluster",
                                   initialCluster_,
                                   "--initial-cluster-state",
                                   "new",
                                   "--initial-cluster-token",
                                   "pltrun-test-" + dir_.path(),
                                   "--heartbeat-interval",
                                   "50",
                                   "--election-timeout",
                                   "500"};
  if (!options_.certFile.empty()) {
    argv.insert(argv.end(), {"--cert-file", options_.certFile, "--key-file", options_.keyFile, "--trusted-ca-file",
                             options_.trustedCaFile, "--client-cert-auth"});
  }
  member.process = std::make_unique<ChildProcess>(argv);
}

std::string EtcdCluster::clientUrl(int port) const {
  return (options_.certFile.empty() ? "http" : "https") + std::string("://127.0.0.1:") + std::to_string(port);
}

etcd::EtcdClientOptions EtcdCluster::clientOptions() const {
  etcd::EtcdClientOptions options = options_.client;
  options.endpoints = endpoints();
  return options;
}

void EtcdCluster::waitUntilAnswering(int index) {
  etcd::EtcdClientOptions options = options_.client;
  options.endpoints = {endpoint(index)};
  options.timeout = 1s;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      etcd::EtcdClient client(options);
      client.get("pltrun-test/health");  // a linearizable read: answered once there is a leader
      return;
    } catch (const std::exception& error) {
      last = error.what();
    }
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("etcd member " + members_.at(index).name + " did not answer within 30 s (" + last +
                           "); its log:\n" + log(index));
}

std::vector<etcd::EtcdEndpoint> EtcdCluster::endpoints() const {
  std::vector<etcd::EtcdEndpoint> all;
  for (int index = 0; index < size(); ++index) all.push_back(endpoint(index));
  return all;
}

etcd::EtcdEndpoint EtcdCluster::endpoint(int member) const {
  return etcd::EtcdEndpoint{"127.0.0.1", members_.at(member).clientPort};
}

int EtcdCluster::memberAt(const std::string& text) const {
  for (int index = 0; index < size(); ++index) {
    if (etcd::endpointText(endpoint(index)) == text) return index;
  }
  return -1;
}

void EtcdCluster::kill(int member) {
  Member& killed = members_.at(member);
  killed.process->signal(SIGKILL);
  killed.process->wait(10s);
  killed.process.reset();
}

void EtcdCluster::stop(int member) { members_.at(member).process->signal(SIGSTOP); }

void EtcdCluster::resume(int member) { members_.at(member).process->signal(SIGCONT); }

void EtcdCluster::restart(int member) {
  start(member);  // the data directory holds the membership: the --initial-* flags are ignored
}

std::string EtcdCluster::log(int member) const {
  const Member& m = members_.at(member);
  return m.process ? m.process->stderrSoFar() : "(not running)";
}

}  // namespace pltrun::test
