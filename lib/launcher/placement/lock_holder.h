#pragma once
// Who holds a flock(2): the kernel's /proc/locks names the holder's pid by the locked file's
// device and inode, whatever the file says (another user may write anything in their own
// lock file). For the line pltrun prints when a lock it waits for stays taken.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace pltrun {

/// The pid holding a granted FLOCK on the file `major:minor:inode` in `procLocks` (the text
/// of /proc/locks); nothing when none is listed. Pure.
std::optional<long long> flockHolderIn(std::string_view procLocks, unsigned major, unsigned minor,
                                       unsigned long long inode);

/// The pid holding a flock on `fd`'s file, from /proc/locks; nothing where it lists none
/// (a holder in another PID namespace).
std::optional<long long> flockHolderPid(int fd);

/// The user running process `pid`; nothing when it is gone.
std::optional<uid_t> processOwner(long long pid);

/// A user as a message names them: the login name, else "uid N"; safe for a terminal.
std::string userNameText(uid_t uid);

/// Who holds the flock on `fd`'s file: "pid 1234 (flock, user alice)"; "a process pltrun
/// cannot see" when /proc/locks does not list it (another PID namespace).
std::string flockHolderText(int fd);

}  // namespace pltrun
