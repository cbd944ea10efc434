// The GPU locks of --auto-select-gpus in a directory other users share (gpu_lock.h,
// gpu_lock_directory.h): each user's lock file per GPU, checked against every other user's;
// files owned by real other users (helpers/other_user.h); the bounded wait for
// pltrun-choosing.lock and who holds it (/proc/locks, lock_holder.h).

#include "launcher/placement/gpu_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "helpers/child_process.h"
#include "helpers/other_user.h"
#include "helpers/temp_dir.h"
#include "launcher/placement/lock_holder.h"
#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::flockHolderIn;
using pltrun::GpuLocks;
using pltrun::test::asUser;
using pltrun::test::canActAsOtherUsers;
using pltrun::test::ChildProcess;
using pltrun::test::OtherUser;
using pltrun::test::otherUser;
using pltrun::test::shellAs;
using pltrun::test::TempDir;

// Catch2 2 has no SKIP: a test that needs other users says why it did not run, and ends.
#define SKIP_WITHOUT_OTHER_USERS()                     \
  if (!canActAsOtherUsers()) {                         \
    WARN("skipped: needs root to act as other users"); \
    return;                                            \
  }

namespace {

// A directory shared like /run/lock: root's, mode 1777.
struct SharedLockDirectory {
  TempDir scratch{"pltrun-gpu-locks"};
  SharedLockDirectory() { REQUIRE(chmod(scratch.path().c_str(), 01777) == 0); }
  std::string path() const { return scratch.path(); }
  std::string lockFile(const std::string& key, uid_t uid) const {
    return path() + "/pltrun-gpu-" + key + "." + std::to_string(uid) + ".lock";
  }
};

// A process of `user` that makes `path` (mode `mode`), writes the pid 4242 in it (which the
// kernel will contradict) and holds flock on it, as that user's pltrun would; it runs until
// the test ends it.
std::unique_ptr<ChildProcess> holderAs(const OtherUser& user, const std::string& path, const char* mode = "0644") {
  auto holder = std::make_unique<ChildProcess>(
      asUser(user, {"/usr/bin/python3", "-c",
                    "import fcntl, os, sys, time\n"
                    "f = open(sys.argv[1], 'w')\n"
                    "f.write('4242\\n'); f.flush(); os.chmod(sys.argv[1], int(sys.argv[2], 8))\n"
                    "fcntl.flock(f, fcntl.LOCK_EX)\n"
                    "print('holding', file=sys.stderr, flush=True)\n"
                    "time.sleep(120)\n",
                    path, mode}));
  REQUIRE(holder->waitForStderr("holding", std::chrono::seconds(30)));
  return holder;
}

void end(std::unique_ptr<ChildProcess>& holder) {
  holder->signal(SIGKILL);
  holder->wait(std::chrono::seconds(30));
}

}  // namespace

TEST_CASE("the kernel's /proc/locks names the holder of a flock", "[gpu_lock]") {
  const std::string locks =
      "1: POSIX  ADVISORY  WRITE 77 08:01:1234 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 4321 00:2d:1234 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 999 00:2d:1234 0 EOF\n"
      "3: FLOCK  ADVISORY  READ 55 08:01:99 0 EOF\n";
  CHECK(flockHolderIn(locks, 0x00, 0x2d, 1234) == 4321);
  CHECK(flockHolderIn(locks, 8, 1, 99) == 55);
  CHECK_FALSE(flockHolderIn(locks, 8, 1, 1234));  // a POSIX lock: not flock's
  CHECK_FALSE(flockHolderIn(locks, 8, 1, 100));
  CHECK_FALSE(flockHolderIn("", 8, 1, 99));
}

TEST_CASE("a held pltrun-choosing.lock is waited for a bounded time, naming its holder", "[gpu_lock]") {
  TempDir dir("pltrun-gpu-locks");
  GpuLocks first(dir.path());
  CHECK(first.notice().empty());
  const auto start = std::chrono::steady_clock::now();
  GpuLocks second(dir.path(), std::chrono::milliseconds(300));  // first still chooses
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(300));
  CHECK_THAT(second.notice(), Contains("pid " + std::to_string(getpid()) + " (") &&
                                  Contains("user root) has held " + dir.path() + "/pltrun-choosing.lock for 0.3 s") &&
                                  Contains("choosing without it"));
  CHECK(second.tryLock("0").taken);  // the GPU locks still work
  CHECK_FALSE(first.tryLock("0").taken);
  first.finishChoosing();
  GpuLocks third(dir.path(), std::chrono::milliseconds(300));
  CHECK(third.notice().empty());
}

TEST_CASE("another user's held lock file takes the GPU, read-only, named with that user", "[gpu_lock]") {
  SKIP_WITHOUT_OTHER_USERS();
  SharedLockDirectory dir;
  const auto& other = otherUser(1);
  // Not writable by others, as fs.protected_regular=1 treats another user's file here.
  auto holder = holderAs(other, dir.lockFile("0", other.uid), "0444");
  GpuLocks locks(dir.path());
  const GpuLocks::Attempt zero = locks.tryLock("0");
  CHECK_FALSE(zero.taken);
  CHECK(zero.heldBy == holder->pid());  // the kernel's word, not the file's 4242
  CHECK(zero.heldByUser == other.name);
  CHECK(zero.problem.empty());
  CHECK(locks.tryLock("1").taken);
  SECTION("released, the GPU is free again, and this user's own lock file is the one taken") {
    end(holder);
    CHECK(locks.tryLock("0").taken);
    CHECK(std::filesystem::exists(dir.lockFile("0", geteuid())));
  }
  SECTION("a check holds a shared lock for a moment only: the other user's pltrun can lock again") {
    end(holder);
    const int again = open(dir.lockFile("0", other.uid).c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(again >= 0);
    CHECK(flock(again, LOCK_EX | LOCK_NB) == 0);
    close(again);
  }
}

TEST_CASE("a lock file planted under a user's name by someone else is nobody's lock", "[gpu_lock]") {
  SKIP_WITHOUT_OTHER_USERS();
  SharedLockDirectory dir;
  const auto& one = otherUser(1);
  const auto& two = otherUser(2);
  SECTION("another user's name, held by a third: passed over") {
    auto holder = holderAs(two, dir.lockFile("0", one.uid));
    GpuLocks locks(dir.path());
    CHECK(locks.tryLock("0").taken);
    end(holder);
  }
  SECTION("this user's name, made by another, who could delete it: the GPU cannot be locked, and says why") {
    auto holder = holderAs(one, dir.lockFile("0", geteuid()));
    GpuLocks locks(dir.path());
    const GpuLocks::Attempt zero = locks.tryLock("0");
    CHECK_FALSE(zero.taken);
    CHECK_THAT(zero.problem, Contains("has a lock file pltrun cannot use (" + dir.lockFile("0", geteuid())) &&
                                 Contains("made by user " + one.name + ", not by you"));
    end(holder);
  }
}

TEST_CASE("a GPU lock directory others could delete locks in is refused in one line", "[gpu_lock]") {
  TempDir top("pltrun-gpu-locks");
  REQUIRE(chmod(top.path().c_str(), 01777) == 0);
  const std::string dir = top / "locks";
  SECTION("writable by others without the sticky bit") {
    REQUIRE(mkdir(dir.c_str(), 0700) == 0);
    REQUIRE(chmod(dir.c_str(), 0777) == 0);
    CHECK_THROWS_WITH(GpuLocks(dir), Contains("the GPU lock directory '" + dir +
                                              "' is writable by other users without the sticky bit (mode 0777)") &&
                                         Contains("chmod +t"));
    REQUIRE(chmod(dir.c_str(), 01777) == 0);
    CHECK_NOTHROW(GpuLocks(dir));
  }
  SECTION("another user's, sticky or not") {
    SKIP_WITHOUT_OTHER_USERS();
    const auto& other = otherUser(1);
    REQUIRE(shellAs(other, "mkdir -m 1777 '" + dir + "'") == 0);
    CHECK_THROWS_WITH(GpuLocks(dir), Contains("the GPU lock directory '" + dir + "' belongs to user " + other.name) &&
                                         Contains("set PLTRUN_GPU_LOCK_DIR"));
  }
  SECTION("a symbolic link, whoever made it") {
    TempDir target("pltrun-gpu-target");
    REQUIRE(symlink(target.path().c_str(), dir.c_str()) == 0);
    CHECK_THROWS_WITH(GpuLocks(dir), Contains("the GPU lock directory '" + dir + "' is a symbolic link"));
    CHECK(std::filesystem::is_empty(target.path()));
  }
}
