#include "launcher/output/launcher_log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/terminal_text.h"
#include "launcher/output/console_writer.h"

namespace pltrun {

namespace {

// pltrun's own lines go through the console like the workers' (never blocking the event
// loop, and after the worker lines queued before them), colored as spdlog's stderr sink
// colors them when stderr is a terminal. Every message is one line: what it quotes (a host
// name or message from the store, a worker's error text, a peer's reply) has its newlines
// and controls shown as \xNN, so that no one else's text can start a "pltrun: " line of its
// own or drive the terminal.
class ConsoleSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  ConsoleSink() {
    const char* term = std::getenv("TERM");
    colored_ = isatty(2) && term != nullptr && std::strcmp(term, "dumb") != 0;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& original) override {
    const std::string payload = terminalSafeLine(std::string_view(original.payload.data(), original.payload.size()));
    spdlog::details::log_msg message = original;
    message.payload = spdlog::string_view_t(payload.data(), payload.size());
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
