#pragma once
// Real second (and third) Unix users for the tests of issue 42: on a shared machine another
// local user is the attacker, so those tests plant files, hold locks and open connections
// as a real user other than the one running pltrun. CI runs as root; the users are system
// accounts without a home or a login shell, created once on first use and kept (creating
// and deleting accounts on every run would race with the other tests ctest runs at once).

#include <sys/types.h>

#include <string>
#include <vector>

namespace pltrun::test {

struct OtherUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

/// True when the tests can act as other users (they run as root); a test that needs one
/// SKIPs otherwise, saying why.
bool canActAsOtherUsers();

/// The test user number `which` (1 or 2: "pltrun-other1", "pltrun-other2"), created with
/// useradd when missing (under a lock, so parallel tests do not race on /etc/passwd).
/// Throws when it cannot be created.
const OtherUser& otherUser(int which = 1);

/// `argv` prefixed so that it runs as `user` (setpriv: real and effective ids, no
/// supplementary groups), for ChildProcess or runAs.
std::vector<std::string> asUser(const OtherUser& user, const std::vector<std::string>& argv);

/// Runs a shell command line as `user` (sh -c), waits up to 60 s, and returns its exit
/// status (128 + signal when killed). For planting files and links: "ln -s ...", "mkdir ...".
int shellAs(const OtherUser& user, const std::string& commandLine);

/// chown(2) of `path` (not following a link) to `user`; throws on failure.
void giveTo(const OtherUser& user, const std::string& path);

}  // namespace pltrun::test
