#include "e2e/torch_runtimes.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "helpers/child_process.h"

namespace pltrun::test {

bool TorchRuntime::available() const {
  ChildProcess check({"/bin/bash", "-c", probe});
  Finished result = check.wait(std::chrono::seconds(120));
  INFO("torch " << version << " is needed: " << installHint << "\n" << result.out << result.err);
  REQUIRE(result.status == 0);
  return true;
}

std::vector<std::string> TorchRuntime::workerEnvironment(const std::string& directory) const {
  // gloo binds to the address the host name resolves to unless told otherwise; TMPDIR puts
  // pltrun's run directory (the workers' error files) where the chroot's workers see it.
  return {"PYTHON_EXEC=" + pythonExec, "PLTRUN_TORCH2_BINDS=" + directory, "GLOO_SOCKET_IFNAME=lo",
          "TMPDIR=" + directory};
}

TorchRuntime torch113() {
  return {"1.13", "/usr/bin/python3", "/usr/bin/python3 -c 'import torch.distributed'",
          "bash scripts/install-deps.sh --with-torch (Debian's python3-torch)"};
}

namespace {

TorchRuntime inChroot(const std::string& version, const std::string& suite) {
  const std::string tests = TESTS_SOURCE_DIR;
  return {version, tests + "/torch2/python3-" + suite,
          "bash '" + tests + "/../scripts/chroot/torch.sh' " + suite + " ready",
          "bash scripts/chroot/torch.sh " + suite + " ensure (Debian " + suite + "'s python3-torch in a chroot)"};
}

}  // namespace

TorchRuntime torch26() { return inChroot("2.6", "trixie"); }

TorchRuntime torch214() { return inChroot("2.14", "forky"); }

}  // namespace pltrun::test
