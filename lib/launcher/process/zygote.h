#pragma once
// --preload: one warm Python interpreter per node, the zygote, that imports the preloaded
// modules once; every worker of every attempt is then forked from it instead of starting a
// fresh interpreter that imports them again (zygote.py is its side and says how a worker
// is made). This is pltrun's side: it starts the zygote, hands it a worker's start and takes
// back the worker, which is then pltrun's own child like one spawnChild started. When the
// zygote cannot serve (its preload failed, it died, hung, or could no longer fork soundly)
// it is ended, and the caller starts workers cold (zygote_starter.h).

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "launcher/process/child_spawn.h"

namespace pltrun {

struct ZygoteSettings {
  std::string interpreter;               ///< the workers' Python (PYTHON_EXEC), as they run it
  std::vector<std::string> workerArgv;   ///< the workers' argv: python -u SCRIPT|-m MODULE ARGS
  std::vector<std::string> preload;      ///< modules to import, in order
  std::vector<std::string> environment;  ///< "KEY=VALUE": what every worker's environment shares
  int guardFd = -1;                      ///< the orphan guard's pipe: the zygote dies with pltrun
  /// How long the preload may take before workers start cold instead.
  std::chrono::milliseconds preloadDeadline{std::chrono::minutes(2)};
  /// How long one fork may take before the zygote counts as hung.
  std::chrono::milliseconds forkDeadline{std::chrono::seconds(30)};
};

class Zygote {
 public:
  /// Starts the zygote, which imports the modules while pltrun goes on; a zygote that
  /// cannot be started fails the first fork() instead of throwing.
  explicit Zygote(ZygoteSettings settings);
  /// Ends the zygote (SIGKILL to its group) and reaps it.
  ~Zygote();
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  /// Whether the worker `setup` describes is the zygote's to start: the interpreter's
  /// program, as the zygote itself runs (python -u ...).
  bool startsLike(const ChildSetup& setup) const;

  /// Starts the worker as a fork of the zygote, waiting for the preload to finish first.
  /// On success the worker is a child of pltrun, its pidfd open, claimed as spawnChild's
  /// are. Otherwise returns pid -1 and `why` says in one line why the zygote cannot serve;
  /// it is then ended and every later call fails at once with the same reason. A worker
  /// whose argv or environment is not UTF-8 is refused with `why` empty, the zygote kept.
  SpawnedChild fork(const ChildSetup& setup, std::string& why);

  /// The zygote's pid (-1 when it could not be started): its process group too.
  pid_t pid() const { return pid_; }

 private:
  void start();
  bool awaitReady();
  SpawnedChild askForWorker(const ChildSetup& setup, const std::string& request, std::string& why);
  bool receiveAnswer(std::chrono::milliseconds deadline, std::string& answer);
  void fail(std::string why);
  void end();

  ZygoteSettings settings_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int control_ = -1;  ///< pltrun's end of the SOCK_SEQPACKET socket (the zygote's stdin)
  bool ready_ = false;
  std::string failure_;  ///< why the zygote no longer serves; empty while it does
};

}  // namespace pltrun
