#pragma once
// etcd as the flags name it (--rdzv-backend etcd): the members, TLS files, credentials and
// key prefix. An elastic agent's store (with its lease), and `pltrun status`'s plain client
// (which takes no lease: reading a job must not change it).

#include <memory>
#include <string>

#include "launcher/plan/launch_config.h"
#include "rendezvous/etcd/etcd_store.h"

namespace pltrun {

/// Connects (failing over between the members) and takes this agent's lease, whose time to
/// live is the keep-alive budget (keep_alive_interval x keep_alive_max_attempt). Throws
/// Error with one line naming every member and what to check when none answers.
std::unique_ptr<etcd::EtcdStore> connectEtcdStore(const RendezvousSettings& settings, const std::string& runId);

/// A client of the members, with the TLS files and credentials of `settings`.
etcd::EtcdClientOptions etcdClientOptions(const RendezvousSettings& settings);

/// "HOST:PORT,HOST:PORT", as --rdzv-endpoint reads it back.
std::string etcdMembersText(const EtcdSettings& etcd);

}  // namespace pltrun
