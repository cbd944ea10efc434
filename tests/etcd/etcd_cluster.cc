#include "etcd/etcd_cluster.h"

#include <signal.h>

#include <filesystem>
#include <stdexcept>
#include <thread>

namespace pltrun::test {

namespace {

using namespace std::chrono_literals;

// A port found free was taken by someone else (an outgoing connection's ephemeral port)
// before the member bound it: worth another try with other ports.
struct PortTaken : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

EtcdCluster::EtcdCluster(int members, EtcdClusterOptions options) : options_(std::move(options)) {
  for (int attempt = 1;; ++attempt) {
    members_.clear();
    initialCluster_.clear();
    for (int index = 0; index < members; ++index) {
      Member member;
      member.name = "m" + std::to_string(index);
      member.clientPort = freeLoopbackPort();
      member.peerPort = freeLoopbackPort();
      initialCluster_ += (index ? "," : "") + member.name + "=" + peerUrl(member.peerPort);
      members_.push_back(std::move(member));
    }
    try {
      for (int index = 0; index < members; ++index) start(index);
      for (int index = 0; index < members; ++index) waitUntilAnswering(index);
      return;
    } catch (const PortTaken&) {
      if (attempt == 3) throw;
      stopAll();
      std::filesystem::remove_all(dir_.path());
      std::filesystem::create_directories(dir_.path());
    }
  }
}

EtcdCluster::~EtcdCluster() { stopAll(); }

void EtcdCluster::stopAll() {
  for (Member& member : members_) {
    if (!member.process) continue;
    member.process->signal(SIGTERM);
    member.process->wait(10s);
    member.process.reset();
  }
}

void EtcdCluster::start(int index) {
  Member& member = members_.at(index);
  std::vector<std::string> argv;
  if (!options_.networkNamespace.empty()) argv = {"/bin/ip", "netns", "exec", options_.networkNamespace};
  argv.insert(argv.end(), {ETCD_BINARY,
                           "--name",
                           member.name,
                           "--data-dir",
                           dir_ / member.name,
                           "--listen-client-urls",
                           clientUrl(member.clientPort),
                           "--advertise-client-urls",
                           clientUrl(member.clientPort),
                           "--listen-peer-urls",
                           peerUrl(member.peerPort),
                           "--initial-advertise-peer-urls",
                           peerUrl(member.peerPort),
                           "--initial-cluster",
                           initialCluster_,
                           "--initial-cluster-state",
                           "new",
                           "--initial-cluster-token",
                           "pltrun-test-" + dir_.path(),
                           "--heartbeat-interval",
                           "50",
                           "--election-timeout",
                           "500"});
  if (!options_.certFile.empty()) {
    argv.insert(argv.end(), {"--cert-file", options_.certFile, "--key-file", options_.keyFile, "--trusted-ca-file",
                             options_.trustedCaFile, "--client-cert-auth"});
  }
  member.process = std::make_unique<ChildProcess>(argv);
}

std::string EtcdCluster::clientUrl(int port) const {
  const std::string scheme = options_.certFile.empty() ? "http://" : "https://";
  return scheme + endpointText(pltrun::Endpoint{options_.address, port});
}

std::string EtcdCluster::peerUrl(int port) const {
  return "http://" + endpointText(pltrun::Endpoint{options_.address, port});
}

etcd::EtcdClientOptions EtcdCluster::clientOptions() const {
  etcd::EtcdClientOptions options = options_.client;
  options.endpoints = endpoints();
  return options;
}

void EtcdCluster::waitUntilAnswering(int index) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    if (answers(index, last)) return;
    if (log(index).find("address already in use") != std::string::npos) {
      throw PortTaken("etcd member " + members_.at(index).name + " found its port taken");
    }
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("etcd member " + members_.at(index).name + " did not answer within 30 s (" + last +
                           "); its log:\n" + log(index));
}

bool EtcdCluster::answers(int index, std::string& why) const {
  if (!options_.networkNamespace.empty()) {  // out of this process's reach: etcdctl inside
    ChildProcess health({"/bin/ip", "netns", "exec", options_.networkNamespace, "/usr/bin/etcdctl", "--endpoints",
                         clientUrl(members_.at(index).clientPort), "endpoint", "health"},
                        {"ETCDCTL_API=3"});
    const Finished finished = health.wait(10s);
    why = finished.out + finished.err;
    return finished.status == 0;
  }
  etcd::EtcdClientOptions options = options_.client;
  options.endpoints = {endpoint(index)};
  options.timeout = 1s;
  try {
    etcd::EtcdClient client(options);
    client.get("pltrun-test/health");  // a linearizable read: answered once there is a leader
    return true;
  } catch (const std::exception& error) {
    why = error.what();
    return false;
  }
}

std::string EtcdCluster::endpointsText() const {
  std::string text;
  for (const pltrun::Endpoint& member : endpoints()) text += (text.empty() ? "" : ",") + endpointText(member);
  return text;
}

std::vector<pltrun::Endpoint> EtcdCluster::endpoints() const {
  std::vector<pltrun::Endpoint> all;
  for (int index = 0; index < size(); ++index) all.push_back(endpoint(index));
  return all;
}

pltrun::Endpoint EtcdCluster::endpoint(int member) const {
  return pltrun::Endpoint{options_.address, members_.at(member).clientPort};
}

int EtcdCluster::memberAt(const std::string& text) const {
  for (int index = 0; index < size(); ++index) {
    if (endpointText(endpoint(index)) == text) return index;
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
