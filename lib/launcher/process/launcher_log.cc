#include "launcher/process/launcher_log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace pltrun {

void configureLauncherLog(bool quiet) {
  // Single-threaded sink: the launcher runs one event loop on one thread.
  auto logger = spdlog::stderr_color_st("pltrun");
  logger->set_pattern("%^pltrun%$: %v");
  logger->set_level(quiet ? spdlog::level::warn : spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace pltrun
