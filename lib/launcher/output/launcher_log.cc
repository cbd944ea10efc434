#include "launcher/output/launcher_log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "launcher/output/console_writer.h"

namespace pltrun {

namespace {

// pltrun's own lines go through the console like the workers' (never blocking the event
// loop, and after the worker lines queued before them), colored as spdlog's stderr sink
// colors them when stderr is a terminal.
class ConsoleSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  ConsoleSink() {
    const char* term = std::getenv("TERM");
    colored_ = isatty(2) && term != nullptr && std::strcmp(term, "dumb") != 0;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(message, formatted);
    std::string text(formatted.data(), formatted.size());
    if (colored_ && message.color_range_end > message.color_range_start) {
      text.insert(message.color_range_end, "\033[0m");
      text.insert(message.color_range_start, colorOf(message.level));
    }
    launcherConsole().write(text, true);
  }
  void flush_() override {}

 private:
  static const char* colorOf(spdlog::level::level_enum level) {
    switch (level) {
      case spdlog::level::info:
        return "\033[32m";
      case spdlog::level::warn:
        return "\033[33m\033[1m";
      case spdlog::level::err:
      case spdlog::level::critical:
        return "\033[31m\033[1m";
      default:
        return "\033[36m";
    }
  }
  bool colored_ = false;
};

}  // namespace

void configureLauncherLog(bool quiet, bool verbose) {
  auto logger = std::make_shared<spdlog::logger>("pltrun", std::make_shared<ConsoleSink>());
  logger->set_pattern("%^pltrun%$: %v");
  logger->set_level(quiet ? spdlog::level::warn : verbose ? spdlog::level::debug : spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

}  // namespace pltrun
