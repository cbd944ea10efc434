#include "launcher/process/job_cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "launcher/output/private_file.h"
#include "launcher/process/cgroup_paths.h"

namespace pltrun {
namespace {

// The small /proc and cgroupfs files this reads; "" when one cannot be read.
std::string readWhole(const std::string& path) {
  constexpr size_t kLimit = 1 << 20;  // mountinfo of a container with many mounts stays far below
  return readRegularFile(path, kLimit).value_or("");
}

// This process's cgroup v2 directory, or a reason why there is none.
std::optional<std::string> ownCgroupDirectory(std::string& reason) {
  const std::optional<Cgroup2Mount> mount = findCgroup2Mount(readWhole("/proc/self/mountinfo"));
  if (!mount) {
    reason = "no cgroup v2 file system is mounted";
    return std::nullopt;
  }
  const std::optional<std::string> path = unifiedCgroupPath(readWhole("/proc/self/cgroup"));
  if (!path) {
    reason = "/proc/self/cgroup has no cgroup v2 entry";
    return std::nullopt;
  }
  std::optional<std::string> directory = cgroupDirectory(*mount, *path);
  if (!directory) reason = "this process's cgroup " + *path + " is outside the mounted cgroup v2 tree";
  return directory;
}

// Open above fd 2: the orphan guard puts /dev/null on 0, 1 and 2, and pltrun may have
// been started with one of them closed.
int openForWriting(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || fd > 2) return fd;
  const int above = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return above;
}

// Removes the cgroups inside `path`, deepest first: the job cgroup of a pltrun run as a
// worker (a local agent), whose own cleanup was killed with it by the parent's
// cgroup.kill. Their processes went with that kill.
void removeChildCgroups(const std::string& path) {
  DIR* directory = ::opendir(path.c_str());
  if (directory == nullptr) return;
  while (const dirent* entry = ::readdir(directory)) {
    const std::string name = entry->d_name;
    if (entry->d_type != DT_DIR || name == "." || name == "..") continue;
    const std::string child = path + "/" + name;
    removeChildCgroups(child);
    ::rmdir(child.c_str());
  }
  ::closedir(directory);
}

// Processes can join only a "domain" cgroup: one made in a threaded subtree is "domain
// invalid", and a worker's move into it would fail.
bool acceptsProcesses(const std::string& path) { return readWhole(path + "/cgroup.type") == "domain\n"; }

}  // namespace

std::unique_ptr<JobCgroup> JobCgroup::create() {
  const char* setting = std::getenv("PLTRUN_CGROUP");
  if (setting != nullptr && std::string(setting) == "off") return nullptr;
  std::string reason;
  const std::optional<std::string> own = ownCgroupDirectory(reason);
  // Moving a process between cgroups needs write access to their common ancestor's
  // cgroup.procs: here, our own cgroup's. Without it the cgroup is not ours to divide.
  if (own && ::access((*own + "/cgroup.procs").c_str(), W_OK) != 0) {
    reason = "cannot write " + *own + "/cgroup.procs (" + std::strerror(errno) + ")";
  }
  if (!reason.empty()) {
    spdlog::debug("no job cgroup: {}", reason);
    return nullptr;
  }
  static std::atomic<int> made{0};
  const std::string path = *own + "/pltrun-" + std::to_string(::getpid()) + "-" + std::to_string(made++);
  if (::mkdir(path.c_str(), 0755) != 0) {
    spdlog::debug("no job cgroup: cannot create {} ({})", path, std::strerror(errno));
    return nullptr;
  }
  const int procsFd = openForWriting(path + "/cgroup.procs");
  const int killFd = openForWriting(path + "/cgroup.kill");  // Linux 5.14 and later
  if (procsFd < 0 || killFd < 0 || !acceptsProcesses(path)) {
    spdlog::debug("no job cgroup: {} has no usable cgroup.procs and cgroup.kill, or is not a domain cgroup", path);
    if (procsFd >= 0) ::close(procsFd);
    if (killFd >= 0) ::close(killFd);
    ::rmdir(path.c_str());
    return nullptr;
  }
  spdlog::debug("job cgroup: {}", path);
  return std::unique_ptr<JobCgroup>(new JobCgroup(path, procsFd, killFd));
}

JobCgroup::~JobCgroup() {
  killAll();
  ::close(procsFd_);
  ::close(killFd_);
  if (!removeCgroupWhenEmpty(path_.c_str(), 100)) {
    spdlog::warn("could not remove the job's cgroup {}: a process in it has not exited", path_);
  }
}

void JobCgroup::killAll() const { killCgroup(killFd_); }

void killCgroup(int killFd) {
  while (::write(killFd, "1", 1) < 0 && errno == EINTR) {
  }
}

bool removeCgroupWhenEmpty(const char* path, int attempts) {
  // A killed process leaves the cgroup when it exits (a zombie no longer counts), which
  // takes a moment after cgroup.kill: EBUSY until then, or while a cgroup is left inside.
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (::rmdir(path) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    removeChildCgroups(path);
    if (::rmdir(path) == 0) return true;
    const timespec pause{0, 10 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  return false;
}

}  // namespace pltrun
