#include "launcher/net/etcd_access.h"

#include <cmath>

#include "launcher/command_line/rendezvous_flags.h"
#include "pltrun/error.h"
#include "rendezvous/store/server/secret_file.h"

namespace pltrun {

namespace {

// One request on one member, connecting included: a member that is down refuses at once,
// one that hangs costs this much before the next is tried.
constexpr std::chrono::milliseconds kLongestRequest{5000};

std::chrono::seconds leaseTimeToLive(const RendezvousSettings& settings) {
  const auto budget = settings.keepAliveInterval * settings.keepAliveMaxAttempt;
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(budget + std::chrono::milliseconds(999));
  return std::max(seconds, std::chrono::seconds(2));  // etcd refuses shorter leases anyway
}

}  // namespace

std::string etcdMembersText(const EtcdSettings& etcd) {
  std::string text;
  for (const Endpoint& member : etcd.members) {
    text += (text.empty() ? "" : ",") + endpointText(Endpoint{member.host, member.port});
  }
  return text;
}

etcd::EtcdClientOptions etcdClientOptions(const RendezvousSettings& settings) {
  etcd::EtcdClientOptions client;
  client.endpoints = settings.etcd.members;
  client.timeout = std::min(kLongestRequest, settings.readTimeout);
  client.https = settings.etcd.https;
  client.caFile = settings.etcd.caFile;
  client.certFile = settings.etcd.certFile;
  client.keyFile = settings.etcd.keyFile;
  client.user = settings.etcd.user;
  if (!settings.etcd.passwordFile.empty()) {
    client.password = rdzv::readSecretFile(settings.etcd.passwordFile, "password_file", 1);
  }
  return client;
}

std::unique_ptr<etcd::EtcdStore> connectEtcdStore(const RendezvousSettings& settings, const std::string& runId) {
  etcd::EtcdStoreOptions options;
  options.client = etcdClientOptions(settings);
  options.keyPrefix = settings.etcd.prefix;
  options.noticePrefix = settings.etcd.prefix + "pltrun/notices/" + runId + "/";
  options.leaseTtl = leaseTimeToLive(settings);
  options.timeout = settings.readTimeout;
  return std::make_unique<etcd::EtcdStore>(options);  // its errors name every member already
}

}  // namespace pltrun
