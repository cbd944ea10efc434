#pragma once
// The three PyTorch versions every test that touches torch workers runs with: Debian
// bookworm's torch 1.13 (/usr/bin/python3), Debian trixie's torch 2.6 and Debian forky's
// torch 2.14 (each in its chroot of scripts/chroot/torch.sh, through
// tests/torch2/python3-SUITE). All are installed by scripts/test.sh; a missing one fails
// the test with the command that installs it.

#include <string>
#include <vector>

namespace pltrun::test {

struct TorchRuntime {
  std::string version;     ///< "1.13", "2.6" or "2.14": the prefix of torch.__version__
  std::string pythonExec;  ///< the workers' interpreter (PYTHON_EXEC)
  std::string probe;       ///< argv[0..] of a command that exits 0 when this torch is there
  std::string installHint;

  /// REQUIREs that this torch can run (Catch fails the test otherwise); true when it can.
  bool available() const;
  /// What pltrun's environment needs for its workers to run under this torch on loopback,
  /// with `directory` (the test's temporary directory, also pltrun's TMPDIR) visible to them.
  std::vector<std::string> workerEnvironment(const std::string& directory) const;
};

TorchRuntime torch113();
TorchRuntime torch26();
TorchRuntime torch214();

}  // namespace pltrun::test
