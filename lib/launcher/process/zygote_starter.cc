#include "launcher/process/zygote_starter.h"

#include <spdlog/spdlog.h>

#include "launcher/process/worker_process.h"

namespace pltrun {

std::unique_ptr<StartedProcess> ZygoteStarter::start(boost::asio::io_context& context, const ProcessLaunch& launch,
                                                     boost::asio::readable_pipe& stdoutPipe,
                                                     boost::asio::readable_pipe& stderrPipe) {
  return std::make_unique<WorkerProcess>(
      context, launch, stdoutPipe, stderrPipe,
      [this](const ChildSetup& setup, SpawnFailure& failure) { return spawn(setup, failure); });
}

SpawnedChild ZygoteStarter::spawn(const ChildSetup& setup, SpawnFailure& failure) {
  if (zygote_.startsLike(setup)) {
    std::string why;
    const SpawnedChild child = zygote_.fork(setup, why);
    if (child.pid >= 0) return child;
    if (!why.empty() && !saidWhy_) {
      spdlog::warn("--preload: the zygote cannot start workers ({}); they start as fresh interpreters", why);
      saidWhy_ = true;
    }
  }
  return spawnChild(setup, failure);
}

ZygoteRuntime::ZygoteRuntime(std::optional<ZygoteSettings> settings) {
  if (!settings) return;
  zygote = std::make_unique<Zygote>(std::move(*settings));
  starter = std::make_unique<ZygoteStarter>(*zygote);
}

ProcessRuntime ZygoteRuntime::runtime() const {
  return starter ? ProcessRuntime{*starter, realProcessRuntime().timers} : realProcessRuntime();
}

}  // namespace pltrun
