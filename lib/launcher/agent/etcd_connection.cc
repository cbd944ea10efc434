#include "launcher/agent/etcd_connection.h"

#include <cmath>

#include "launcher/plan/rendezvous_flags.h"
#include "pltrun/error.h"
#include "rendezvous/store/secret_file.h"

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
  for (const EtcdSettings::Member& member : etcd.members) {
    text += (text.empty() ? "" : ",") + endpointText(Endpoint{member.host, member.port});
  }
  return text;
}

std::unique_ptr<etcd::EtcdStore> connectEtcdStore(const RendezvousSettings& settings, const std::string& runId) {
  etcd::EtcdStoreOptions options;
  for (const EtcdSettings::Member& member : settings.etcd.members) {
    options.client.endpoints.push_back(etcd::EtcdEndpoint{member.host, member.port});
  }
  options.client.timeout = std::min(kLongestRequest, settings.readTimeout);
  options.client.https = settings.etcd.https;
  options.client.caFile = settings.etcd.caFile;
  options.client.certFile = settings.etcd.certFile;
  options.client.keyFile = settings.etcd.keyFile;
  options.client.user = settings.etcd.user;
  if (!settings.etcd.passwordFile.empty()) {
    options.client.password = rdzv::readSecretFile(settings.etcd.passwordFile, "password_file", 1);
  }
  options.keyPrefix = settings.etcd.prefix;
  options.noticePrefix = settings.etcd.prefix + "pltrun/notices/" + runId + "/";
  options.leaseTtl = leaseTimeToLive(settings);
  options.timeout = settings.readTimeout;
  return std::make_unique<etcd::EtcdStore>(options);  // its errors name every member already
}

}  // namespace pltrun
