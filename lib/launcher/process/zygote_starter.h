#pragma once
// The ProcessStarter of --preload: a Python worker is forked from the node's zygote
// (zygote.h); anything else, and every worker once the zygote cannot serve, starts as a
// fresh process, the way WorkerProcessStarter starts it. Why the zygote stopped serving is
// said once, in one line: the job goes on, only slower to start.

#include <memory>
#include <optional>

#include "launcher/process/process_runtime.h"
#include "launcher/process/process_seam.h"
#include "launcher/process/zygote.h"

namespace pltrun {

class ZygoteStarter final : public ProcessStarter {
 public:
  explicit ZygoteStarter(Zygote& zygote) : zygote_(zygote) {}

  std::unique_ptr<StartedProcess> start(boost::asio::io_context& context, const ProcessLaunch& launch,
                                        boost::asio::readable_pipe& stdoutPipe,
                                        boost::asio::readable_pipe& stderrPipe) override;

 private:
  SpawnedChild spawn(const ChildSetup& setup, SpawnFailure& failure);

  Zygote& zygote_;
  bool saidWhy_ = false;
};

/// A node's zygote and the starter that forks from it, both none without --preload.
struct ZygoteRuntime {
  /// Starts the zygote when `settings` are given.
  explicit ZygoteRuntime(std::optional<ZygoteSettings> settings);

  /// Real timers, and the zygote's starter when there is a zygote (else real processes).
  ProcessRuntime runtime() const;

  std::unique_ptr<Zygote> zygote;
  std::unique_ptr<ZygoteStarter> starter;
};

}  // namespace pltrun
