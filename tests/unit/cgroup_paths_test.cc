// Finding this process's cgroup v2 directory from /proc text, in each layout pltrun meets.

#include "launcher/process/cgroup_paths.h"

#include <catch2/catch.hpp>

using namespace pltrun;

namespace {

// A hybrid host (systemd's legacy layout): v1 controllers, v2 under /sys/fs/cgroup/unified.
const char* const kHybridMountinfo =
    "25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "28 25 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "29 28 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw\n"
    "31 28 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,memory\n";

// Pure v2, no optional fields before the separator.
const char* const kUnifiedMountinfo =
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw\n";

}  // namespace

TEST_CASE("cgroup paths: the cgroup2 mount is found in every layout, or reported missing", "[cgroup]") {
  const auto hybrid = findCgroup2Mount(kHybridMountinfo);
  REQUIRE(hybrid);
  CHECK(hybrid->mountPoint == "/sys/fs/cgroup/unified");
  CHECK(hybrid->root == "/");
  const auto unified = findCgroup2Mount(kUnifiedMountinfo);
  REQUIRE(unified);
  CHECK(unified->mountPoint == "/sys/fs/cgroup");
  // A mount point with a space is written \040 by the kernel.
  const auto escaped = findCgroup2Mount("40 24 0:30 /job /mnt/my\\040cgroups rw shared:1 - cgroup2 none rw\n");
  REQUIRE(escaped);
  CHECK(escaped->mountPoint == "/mnt/my cgroups");
  CHECK(escaped->root == "/job");
  // Only v1 hierarchies, or a line cut short: no mount.
  CHECK_FALSE(findCgroup2Mount("31 28 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"));
  CHECK_FALSE(findCgroup2Mount("31 28 0:29 / /sys/fs/cgroup rw -\n"));
  CHECK_FALSE(findCgroup2Mount(""));
}

TEST_CASE("cgroup paths: the v2 entry of /proc/self/cgroup", "[cgroup]") {
  CHECK(unifiedCgroupPath("12:memory:/user.slice\n0::/user.slice/user-1000.slice/session-3.scope\n") ==
        "/user.slice/user-1000.slice/session-3.scope");
  CHECK(unifiedCgroupPath("0::/\n") == "/");
  CHECK_FALSE(unifiedCgroupPath("12:memory:/user.slice\n1:name=systemd:/\n"));
  CHECK_FALSE(unifiedCgroupPath("0::\n"));
}

TEST_CASE("cgroup paths: the directory is the path under the mount, inside its root only", "[cgroup]") {
  const Cgroup2Mount host{"/sys/fs/cgroup", "/"};
  CHECK(cgroupDirectory(host, "/") == "/sys/fs/cgroup");
  CHECK(cgroupDirectory(host, "/system.slice/job.service") == "/sys/fs/cgroup/system.slice/job.service");
  // A container that sees a subtree mounted at /sys/fs/cgroup.
  const Cgroup2Mount container{"/sys/fs/cgroup", "/kubepods/pod1"};
  CHECK(cgroupDirectory(container, "/kubepods/pod1") == "/sys/fs/cgroup");
  CHECK(cgroupDirectory(container, "/kubepods/pod1/step") == "/sys/fs/cgroup/step");
  CHECK_FALSE(cgroupDirectory(container, "/kubepods/pod10"));
  CHECK_FALSE(cgroupDirectory(container, "/system.slice"));
}
