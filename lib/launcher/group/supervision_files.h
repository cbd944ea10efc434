#pragma once
// The run's private directory for what pltrun and its workers exchange while they run,
// apart from the logs (which may sit on a network file system, where Unix sockets do not
// work, at a path too long for one): each worker's heartbeat socket and stack file, the
// Python hook that makes stack dumps possible, torch's FileTimer FIFO. Mode 0700 under
// $TMPDIR (or /tmp), removed when the run ends.

#include <filesystem>
#include <string>
#include <vector>

#include "launcher/output/run_directory.h"

namespace pltrun {

class SupervisionFiles {
 public:
  /// Creates the directory; with `pythonHook`, also the hook (pythonHookDirectory()).
  explicit SupervisionFiles(bool pythonHook);
  ~SupervisionFiles();
  SupervisionFiles(const SupervisionFiles&) = delete;
  SupervisionFiles& operator=(const SupervisionFiles&) = delete;

  /// PLTRUN_HEARTBEAT of one worker of one attempt (bound by the worker group).
  std::string heartbeatPath(int attempt, int localRank) const;
  /// PLTRUN_STACK_FILE of one worker of one attempt: where its Python processes dump.
  std::string stackFile(int attempt, int localRank) const;
  /// The directory put first on the workers' PYTHONPATH: a sitecustomize.py that registers
  /// faulthandler on the stack signal, then imports the next sitecustomize on the path.
  /// Empty without the hook.
  std::string pythonHookDirectory() const { return hookDirectory_; }
  /// Where torch's FileTimer FIFO goes when TORCHELASTIC_TIMER_FILE names none.
  std::string timerFifoPath() const;
  /// The signal the hook dumps stacks on; 0 without the hook.
  int stackSignal() const;
  /// The directory, removed when the run ends.
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
  std::string hookDirectory_;
};

/// What the orphan guard removes when pltrun is gone (a `kill -9 pltrun` cannot remove them
/// itself): the run directory when it is a temporary one (it keeps no logs), and the
/// supervision files' directory when there is one.
std::vector<std::string> temporaryDirectories(const RunDirectory& directory, const SupervisionFiles* supervision);

}  // namespace pltrun
