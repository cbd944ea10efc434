#include "launcher/group/supervision_files.h"

#include <unistd.h>

#include "launcher/output/private_file.h"
#include "launcher/output/run_directory.h"
#include "launcher/stall/stack_sampler.h"

namespace pltrun {
namespace fs = std::filesystem;

namespace {

// Runs at the start of every Python process of the job (PYTHONPATH), before the program.
// It opens the worker's stack file and registers faulthandler on pltrun's stack signal:
// pltrun then reads every thread's stack without stopping the process. It changes nothing
// else, and imports the sitecustomize it shadows (the system's, a virtualenv's, a test's).
constexpr const char* kPythonHook =
    R"(# pltrun's Python hook: stack dumps for stall reports (see pltrun's docs/USAGE.md, "Hangs").
import os
import sys


def _pltrun_register_stack_dump():
    path = os.environ.get("PLTRUN_STACK_FILE")
    number = os.environ.get("PLTRUN_STACK_SIGNAL")
    if not path or not number:
        return
    try:
        import faulthandler
        stream = open(path, "a")
        faulthandler.register(int(number), file=stream, all_threads=True, chain=False)
        sys._pltrun_stack_file = stream  # kept open for the handler
    except Exception:
        pass


def _pltrun_import_next_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    this = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401  the next one on the path, if any
    except ImportError as error:
        if error.name != "sitecustomize":
            raise
        sys.modules["sitecustomize"] = this


_pltrun_register_stack_dump()
# Kept for pltrun's --preload zygote: its workers are forked, not started, and register
# their own stack file with it.
sys._pltrun_register_stack_dump = _pltrun_register_stack_dump
_pltrun_import_next_sitecustomize()
)";

fs::path supervisionRoot() {
  // A Unix socket's path has at most 107 bytes: a long TMPDIR falls back to /tmp.
  const std::string base = temporaryBase();
  return makeTemporaryDirectory("pltrun-run", base.size() > 64 ? "/tmp" : base);
}

}  // namespace

SupervisionFiles::SupervisionFiles(bool pythonHook) : root_(supervisionRoot()) {
  if (!pythonHook) return;
  hookDirectory_ = (root_ / "python").string();
  createPrivateDirectories(hookDirectory_);
  writePrivateFile(hookDirectory_ + "/sitecustomize.py", kPythonHook);
}

SupervisionFiles::~SupervisionFiles() {
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

std::string SupervisionFiles::heartbeatPath(int attempt, int localRank) const {
  return (root_ / ("hb." + std::to_string(attempt) + "." + std::to_string(localRank))).string();
}

std::string SupervisionFiles::stackFile(int attempt, int localRank) const {
  return (root_ / ("stack." + std::to_string(attempt) + "." + std::to_string(localRank))).string();
}

int SupervisionFiles::stackSignal() const { return hookDirectory_.empty() ? 0 : pythonStackSignal(); }

std::string SupervisionFiles::timerFifoPath() const { return (root_ / "watchdog_timer").string(); }

std::vector<std::string> temporaryDirectories(const RunDirectory& directory, const SupervisionFiles* supervision) {
  std::vector<std::string> directories;
  if (!directory.keepsLogs()) directories.push_back(directory.root().string());
  if (supervision != nullptr) directories.push_back(supervision->root().string());
  return directories;
}

}  // namespace pltrun
