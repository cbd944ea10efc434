#pragma once
// A real OpenSSH server (/usr/sbin/sshd) for one test, listening on loopback addresses only,
// on a port picked at run time, with its own host key, client key and authorized_keys in a
// TempDir. Clients reach it with sshCommand(host): `ssh -F <its ssh_config> host`, which logs
// in as the current user (root) by public key, without prompts or known_hosts.
//
// sshd forks a process per connection ("sshd: root@notty"), and that one the session's
// command; they do not stop with the listening sshd. A test must end its ssh sessions (let the
// client exit, or kill it and wait for the remote side to go) before the SshServer is destroyed,
// or they outlive the test. When the client dies, the connection's sshd exits at once, but a
// command without a tty (no -t) is not signalled: it is orphaned to pid 1 and runs on, unless
// it set PR_SET_PDEATHSIG (its parent is that sshd) or reads its stdin to the end.
//
// The remote command runs in the user's home directory with sshd's environment (HOME, USER,
// the SSH_* variables, a default PATH, and whatever the user's shell startup files add), not
// the test's: name binaries by absolute path and pass variables on the command line.
//
// A connection that closes before it authenticates can leave an sshd helper orphaned to pid 1
// as a zombie for a moment (the fixture's own readiness check opens none): processGone()
// counts it as gone, `pgrep sshd` does not.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

class SshServer {
 public:
  /// Writes the keys and configs, starts sshd in the foreground and waits (about 10 s at most)
  /// until it listens on every address (seen in /proc: the check opens no connection). Throws
  /// std::runtime_error, with sshd's stderr, when it does not. Numeric IPv4 or IPv6 addresses.
  explicit SshServer(const std::vector<std::string>& listenAddresses = {"127.0.0.1", "127.0.0.2"});
  ~SshServer();  ///< SIGTERMs the listening sshd and reaps it
  SshServer(const SshServer&) = delete;
  SshServer& operator=(const SshServer&) = delete;

  int port() const { return port_; }
  /// The client's private key.
  std::string identity() const { return dir_ / "id_ed25519"; }
  /// The ssh_config clients use (`ssh -F`): port, identity, user, no host key checks, batch mode.
  std::string clientConfig() const { return dir_ / "ssh_config"; }
  /// {ssh, -F, clientConfig(), host}: append the remote command.
  std::vector<std::string> sshCommand(const std::string& host) const;
  /// The listening sshd.
  pid_t pid() const;
  /// The listening sshd's children: one per open connection.
  std::vector<pid_t> sessionPids() const;
  /// What sshd has written to stderr so far (LogLevel ERROR).
  std::string log() const;

  /// True when this machine can run the fixture: /usr/sbin/sshd, ssh and ssh-keygen exist and
  /// we are root. Otherwise false, with the reason in *why (tests WARN it and skip).
  static bool available(std::string* why);
  /// ssh's path: found on PATH, else /usr/bin/ssh.
  static std::string sshBinary();

 private:
  bool start(const std::vector<std::string>& listenAddresses, std::string* failure);

  TempDir dir_;
  std::unique_ptr<ChildProcess> sshd_;
  int port_ = 0;
};

}  // namespace pltrun::test
