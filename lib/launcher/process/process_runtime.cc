#include "launcher/process/process_runtime.h"

#include <boost/asio/steady_timer.hpp>

#include "launcher/process/worker_process.h"

namespace pltrun {
namespace {

class SteadyTimer final : public Timer {
 public:
  explicit SteadyTimer(boost::asio::io_context& context) : timer_(context) {}

  void expireAfter(std::chrono::milliseconds delay, std::function<void()> onExpiry) override {
    timer_.expires_after(delay);
    timer_.async_wait([onExpiry = std::move(onExpiry)](boost::system::error_code error) {
      if (!error) onExpiry();  // an error: cancelled, or replaced by a newer deadline
    });
  }

  void cancel() override { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
};

class SteadyTimerFactory final : public TimerFactory {
 public:
  std::unique_ptr<Timer> makeTimer(boost::asio::io_context& context) override {
    return std::make_unique<SteadyTimer>(context);
  }
};

}  // namespace

ProcessRuntime realProcessRuntime() {
  static WorkerProcessStarter starter;
  static SteadyTimerFactory timers;
  return ProcessRuntime{starter, timers};
}

}  // namespace pltrun
