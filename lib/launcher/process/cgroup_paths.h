#pragma once
// Where this process's cgroup v2 directory is, from the text of /proc/self/mountinfo and
// /proc/self/cgroup: pure functions, so every layout (pure v2, hybrid with v2 under
// /sys/fs/cgroup/unified, a container whose mount root is not /) is tested without one.

#include <optional>
#include <string>

namespace pltrun {

/// The cgroup2 mount in `mountinfo` (the text of /proc/self/mountinfo): its mount point
/// and the cgroup path it shows at that point (its root, "/" on a host).
struct Cgroup2Mount {
  std::string mountPoint;
  std::string root;
};
std::optional<Cgroup2Mount> findCgroup2Mount(const std::string& mountinfo);

/// The v2 path in `procSelfCgroup` (the "0::PATH" line of /proc/self/cgroup).
std::optional<std::string> unifiedCgroupPath(const std::string& procSelfCgroup);

/// The directory of cgroup `path` under `mount`; nullopt if the mount does not show it
/// (the path is outside the mount's root).
std::optional<std::string> cgroupDirectory(const Cgroup2Mount& mount, const std::string& path);

}  // namespace pltrun
