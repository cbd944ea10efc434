#pragma once
// An elastic agent's connection to etcd (--rdzv-backend etcd): the store the rendezvous
// runs on, built from the command line's members, TLS files, credentials and key prefix.

#include <memory>
#include <string>

#include "launcher/plan/launch_config.h"
#include "rendezvous/etcd/etcd_store.h"

namespace pltrun {

/// Connects (failing over between the members) and takes this agent's lease, whose time to
/// live is the keep-alive budget (keep_alive_interval x keep_alive_max_attempt). Throws
/// Error with one line naming every member and what to check when none answers.
std::unique_ptr<etcd::EtcdStore> connectEtcdStore(const RendezvousSettings& settings, const std::string& runId);

/// "HOST:PORT,HOST:PORT", as --rdzv-endpoint reads it back.
std::string etcdMembersText(const EtcdSettings& etcd);

}  // namespace pltrun
