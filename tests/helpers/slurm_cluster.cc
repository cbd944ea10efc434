#include "helpers/slurm_cluster.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace pltrun::test {

namespace {

using namespace std::chrono_literals;

constexpr const char* kNsenter = "/usr/bin/nsenter";

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::trunc);
  file << text;
  if (!file) throw std::runtime_error("SlurmCluster: cannot write " + path);
}

// munge's key: 1024 random bytes only its owner reads.
void writeMungeKey(const std::string& path) {
  std::random_device source;
  std::string key(1024, '\0');
  for (char& byte : key) byte = static_cast<char>(source() & 0xff);
  writeFile(path, key);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read);
}

// The inode of a network namespace, as /proc/PID/ns/net names it ("net:[INODE]").
std::string namespaceLink(const std::string& netns) {
  struct stat status {};
  if (::stat(("/run/netns/" + netns).c_str(), &status) != 0) return "";
  return "net:[" + std::to_string(status.st_ino) + "]";
}

std::string tail(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

}  // namespace

bool SlurmCluster::available(std::string* why) {
  if (::geteuid() != 0) {
    *why = "needs root (network, UTS and mount namespaces)";
    return false;
  }
  for (const char* binary : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/srun", "/usr/sbin/munged", kNsenter,
                             "/usr/bin/unshare", "/bin/ip"}) {
    if (::access(binary, X_OK) != 0) {
      *why = std::string(binary) + " is missing (Debian packages slurmctld, slurmd, slurm-client, munge, iproute2)";
      return false;
    }
  }
  return true;
}

SlurmCluster::SlurmCluster(SlurmClusterOptions options) {
  if (!namespaces_.error().empty()) throw std::runtime_error("SlurmCluster: " + namespaces_.error());
  writeConfig(options);
  writeMungeKey(dir_ / "munge.key");
  munged_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/usr/sbin/munged", "--foreground", "--force", "--socket=" + (dir_ / "munge.socket"),
                               "--key-file=" + (dir_ / "munge.key"), "--pid-file=" + (dir_ / "munged.pid"),
                               "--log-file=" + (dir_ / "munged.log"), "--seed-file=" + (dir_ / "munged.seed")},
      std::vector<std::string>{}, dir_ / "munged.out");
  if (!waitForFile(dir_ / "munge.socket", 10s)) {
    throw std::runtime_error("SlurmCluster: munged made no socket within 10 s:\n" + logs());
  }
  slurmctld_ = startDaemon(namespaces_.hub(), "ctl", "exec /usr/sbin/slurmctld -D -i", "slurmctld.out");
  for (int node = 0; node < kNodes; ++node) {
    slurmds_.push_back(startDaemon(namespaces_.spoke(node), nodeName(node),
                                   "exec /usr/sbin/slurmd -D -N " + nodeName(node),
                                   "slurmd-" + nodeName(node) + ".out"));
  }
  waitUntilIdle();
}

void SlurmCluster::writeConfig(const SlurmClusterOptions& options) {
  std::ostringstream hosts;
  hosts << "127.0.0.1 localhost\n" << BridgedNamespaces::kHubAddress << " ctl\n";
  for (int node = 0; node < kNodes; ++node) hosts << nodeAddress(node) << " " << nodeName(node) << "\n";
  writeFile(dir_ / "hosts", hosts.str());
  for (int node = 0; node < kNodes; ++node) std::filesystem::create_directories(dir_ / ("spool-" + nodeName(node)));
  std::filesystem::create_directories(dir_ / "state");

  const std::string d = dir_.path();
  std::ostringstream conf;
  conf << "ClusterName=pltrun-test\n"
       << "SlurmctldHost=ctl(" << BridgedNamespaces::kHubAddress << ")\n"
       << "SlurmctldPort=" << freeLoopbackPort() << "\n"
       << "SlurmdPort=" << freeLoopbackPort() << "\n"
       << "SlurmUser=root\nSlurmdUser=root\n"
       << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << d << "/munge.socket\n"
       << "StateSaveLocation=" << d << "/state\nSlurmdSpoolDir=" << d << "/spool-%n\n"
       << "SlurmctldPidFile=" << d << "/slurmctld.pid\nSlurmdPidFile=" << d << "/slurmd-%n.pid\n"
       << "SlurmctldLogFile=" << d << "/slurmctld.log\nSlurmdLogFile=" << d << "/slurmd-%n.log\n"
       << "ProctrackType=" << options.proctrackType << "\n"
       << "TaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
       << "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\n"
       << "SchedulerType=sched/builtin\nSelectType=select/linear\nMpiDefault=none\nSwitchType=switch/none\n"
       << "MailProg=/bin/true\nReturnToService=2\nSlurmdParameters=config_overrides\nKillWait=5\n"
       << "SlurmctldDebug=info\nSlurmdDebug=info\n";
  for (int node = 0; node < kNodes; ++node) {
    conf << "NodeName=" << nodeName(node) << " NodeAddr=" << nodeAddress(node) << " CPUs=2 State=UNKNOWN\n";
  }
  conf << "PartitionName=test Nodes=node[1-" << kNodes << "] Default=YES MaxTime=INFINITE State=UP\n";
  writeFile(dir_ / "slurm.conf", conf.str());
}

std::unique_ptr<ChildProcess> SlurmCluster::startDaemon(const std::string& netns, const std::string& hostName,
                                                        const std::string& command, const std::string& logName) {
  // The daemon's output goes to a file: the step daemons it forks inherit it and may
  // outlive it, and a pipe they held would keep ChildProcess::wait() waiting.
  const std::string script = "hostname " + hostName + " && mount --bind " + (dir_ / "hosts") + " /etc/hosts && " +
                             command + " >>" + (dir_ / logName) + " 2>&1";
  return std::make_unique<ChildProcess>(
      std::vector<std::string>{kNsenter, "--net=/run/netns/" + netns, "--", "/usr/bin/unshare", "--uts", "--mount",
                               "/bin/sh", "-c", script},
      environment());
}

void SlurmCluster::waitUntilIdle() {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    Finished nodes = run({"sinfo", "-h", "-N", "-o", "%N %t"}, 10s);
    last = nodes.out + nodes.err;
    if (nodes.status == 0 && nodes.out == "node1 idle\nnode2 idle\n") return;
    std::this_thread::sleep_for(100ms);
  }
  throw std::runtime_error("SlurmCluster: the nodes were not idle within 30 s (sinfo: " + last + ")\n" + logs());
}

std::vector<std::string> SlurmCluster::client(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {kNsenter, "--net=/run/netns/" + namespaces_.hub(), "--"};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> SlurmCluster::environment() const { return {"SLURM_CONF=" + (dir_ / "slurm.conf")}; }

Finished SlurmCluster::run(const std::vector<std::string>& args, std::chrono::milliseconds timeout) const {
  ChildProcess command(client(args), environment());
  return command.wait(timeout);
}

std::string SlurmCluster::logs() const {
  std::string text;
  for (const char* name : {"munged.log", "slurmctld.log", "slurmctld.out", "slurmd-node1.log", "slurmd-node1.out",
                           "slurmd-node2.log", "slurmd-node2.out"}) {
    std::string content = readFile(dir_ / name);
    if (!content.empty()) text += "--- " + std::string(name) + ":\n" + tail(content, 3000) + "\n";
  }
  return text;
}

std::vector<pid_t> SlurmCluster::processesInNodes() const {
  std::vector<std::string> links;
  for (int node = 0; node < kNodes; ++node) links.push_back(namespaceLink(namespaces_.spoke(node)));
  std::vector<pid_t> daemons;
  for (const auto& daemon : slurmds_) daemons.push_back(daemon->pid());
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || processGone(static_cast<pid_t>(pid))) continue;
    std::error_code error;
    const std::string link = std::filesystem::read_symlink("/proc/" + std::string(entry->d_name) + "/ns/net", error);
    if (error || link.empty()) continue;
    bool ours = false;
    for (const auto& candidate : links) ours = ours || (!candidate.empty() && link == candidate);
    bool daemon = false;
    for (pid_t slurmd : daemons) daemon = daemon || slurmd == pid;
    if (ours && !daemon) found.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return found;
}

void SlurmCluster::cancelEverything() {
  run({"scancel", "--partition", "test"}, 20s);
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (run({"squeue", "-h"}, 10s).out.empty() && processesInNodes().empty()) return;
    std::this_thread::sleep_for(100ms);
  }
  // Started by this cluster's daemons for this test: ended by pid.
  for (pid_t pid : processesInNodes()) ::kill(pid, SIGKILL);
  waitUntilGone(processesInNodes(), 5s);
}

SlurmCluster::~SlurmCluster() {
  if (slurmctld_) cancelEverything();
  for (auto& daemon : slurmds_) daemon->signal(SIGTERM);
  if (slurmctld_) slurmctld_->signal(SIGTERM);
  for (auto& daemon : slurmds_) daemon->wait(10s);  // SIGKILLed after that
  if (slurmctld_) slurmctld_->wait(10s);
  if (munged_) {
    munged_->signal(SIGTERM);
    munged_->wait(10s);
  }
}

}  // namespace pltrun::test
