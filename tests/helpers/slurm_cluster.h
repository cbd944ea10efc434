#pragma once
// A real two-node Slurm cluster for one test, from Debian's slurm-wlm 22.05: slurmctld in a
// hub network namespace ("ctl", 10.231.78.254) with a bridge, and a slurmd in each of two
// namespaces plugged into it ("node1" at 10.231.78.1, "node2" at .2), each daemon with its
// own host name (a UTS namespace) and an /etc/hosts that names all three (bind-mounted in a
// mount namespace). Authentication by a private munged (its own key and socket); config,
// state, spool and logs in a TempDir; SLURM_CONF points there. No cgroups
// (TaskPlugin=task/none), process tracking as asked (proctrack/pgid by default).
//
// The daemons are entered with `nsenter --net` plus `unshare --uts --mount`: `ip netns exec`
// remounts /sys, and slurmd then fails on /sys/fs/cgroup.
//
// Clients (srun, sbatch, salloc, scancel, squeue) run in the hub namespace: client(args)
// gives the argv, environment() the variables. Slurm's own ports are fixed in slurm.conf;
// they are taken from the kernel at run time (port 0) all the same, and inside namespaces
// made for this cluster nothing else listens.
//
// On destruction every job is cancelled, the step daemons (slurmstepd) and whatever they
// ran are waited for (SIGKILLed after 15 s, by pid, found by their network namespace), then
// the daemons are stopped and reaped and the namespaces deleted.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/network_namespaces.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

struct SlurmClusterOptions {
  std::string proctrackType = "proctrack/pgid";
};

class SlurmCluster {
 public:
  static constexpr int kNodes = 2;

  /// True when this machine can run the cluster: root, slurmctld, slurmd, srun, munged,
  /// nsenter and unshare present. Otherwise false with the reason in *why.
  static bool available(std::string* why);

  /// Starts munged, slurmctld and the slurmds, and waits (30 s at most) until both nodes are
  /// idle. Throws std::runtime_error, with the daemons' logs, when they do not come up.
  explicit SlurmCluster(SlurmClusterOptions options = {});
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  /// The argv that runs a Slurm client command on the controller's network: {nsenter, ...,
  /// args...}; run it with environment().
  std::vector<std::string> client(const std::vector<std::string>& args) const;
  /// SLURM_CONF for the clients (srun passes it on to the tasks).
  std::vector<std::string> environment() const;
  /// Runs a client command to its end (`timeout` at most).
  Finished run(const std::vector<std::string>& args, std::chrono::milliseconds timeout) const;

  /// "node1", "node2" (index 0 and 1) and their addresses.
  static std::string nodeName(int index) { return "node" + std::to_string(index + 1); }
  static std::string nodeAddress(int index) { return BridgedNamespaces::spokeAddress(index); }
  /// Where the test may put its files (readable on every node: one file system).
  const TempDir& directory() const { return dir_; }
  /// The daemons' logs, for a failing test's message.
  std::string logs() const;

 private:
  void writeConfig(const SlurmClusterOptions& options);
  std::unique_ptr<ChildProcess> startDaemon(const std::string& netns, const std::string& hostName,
                                            const std::string& command, const std::string& logName);
  void waitUntilIdle();
  void cancelEverything();
  std::vector<pid_t> processesInNodes() const;

  TempDir dir_;
  BridgedNamespaces namespaces_{kNodes};
  std::unique_ptr<ChildProcess> munged_;
  std::unique_ptr<ChildProcess> slurmctld_;
  std::vector<std::unique_ptr<ChildProcess>> slurmds_;
};

}  // namespace pltrun::test
