#include "helpers/other_user.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>

#include "helpers/child_process.h"

namespace pltrun::test {
namespace {

std::optional<OtherUser> lookUp(const std::string& name) {
  passwd entry{};
  passwd* found = nullptr;
  char buffer[4096];
  if (getpwnam_r(name.c_str(), &entry, buffer, sizeof buffer, &found) != 0 || found == nullptr) return std::nullopt;
  return OtherUser{name, found->pw_uid, found->pw_gid};
}

// useradd takes /etc/passwd's lock itself but fails, rather than waits, when another
// useradd holds it: a lock of our own serializes the tests that create users at once.
void createUser(const std::string& name) {
  const int lockFd = open("/run/lock/pltrun-test-users.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lockFd < 0) throw std::runtime_error(std::string("cannot open the test users' lock: ") + strerror(errno));
  flock(lockFd, LOCK_EX);
  if (!lookUp(name)) {
    ChildProcess useradd(
        {"/usr/sbin/useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name});
    const Finished finished = useradd.wait(std::chrono::seconds(30));
    if (finished.status != 0) {
      close(lockFd);
      throw std::runtime_error("useradd " + name + " failed: " + finished.err);
    }
  }
  close(lockFd);
}

}  // namespace

bool canActAsOtherUsers() { return geteuid() == 0; }

const OtherUser& otherUser(int which) {
  static std::mutex mutex;
  static std::map<int, OtherUser> users;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto known = users.find(which); known != users.end()) return known->second;
  const std::string name = "pltrun-other" + std::to_string(which);
  if (!lookUp(name)) createUser(name);
  const auto user = lookUp(name);
  if (!user) throw std::runtime_error("test user " + name + " missing after useradd");
  return users.emplace(which, *user).first->second;
}

std::vector<std::string> asUser(const OtherUser& user, const std::vector<std::string>& argv) {
  std::vector<std::string> command = {"/usr/bin/setpriv", "--reuid=" + std::to_string(user.uid),
                                      "--regid=" + std::to_string(user.gid), "--clear-groups", "--"};
  command.insert(command.end(), argv.begin(), argv.end());
  return command;
}

int shellAs(const OtherUser& user, const std::string& commandLine) {
  ChildProcess shell(asUser(user, {"/bin/sh", "-c", commandLine}));
  return shell.wait(std::chrono::seconds(60)).status;
}

void giveTo(const OtherUser& user, const std::string& path) {
  if (lchown(path.c_str(), user.uid, user.gid) != 0) {
    throw std::runtime_error("chown " + path + " to " + user.name + ": " + strerror(errno));
  }
}

}  // namespace pltrun::test
