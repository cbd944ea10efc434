#include "launcher/driver/start_progress.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "base/seconds_text.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"
#include "rendezvous/elastic/store_layout.h"

namespace pltrun {
namespace {

constexpr std::chrono::seconds kReportEvery{5};

}  // namespace

AgentStartProgress::AgentStartProgress(boost::asio::io_context& context, TcpStoreOptions store, std::string runId,
                                       const std::vector<HostSlots>& hosts, std::chrono::milliseconds joinTimeout)
    : timer_(context),
      storeOptions_(std::move(store)),
      keys_(rdzv::jobKeyPrefix(runId)),
      hostCount_(hosts.size()),
      hostNames_(hostNamesText(hosts)),
      joinTimeout_(joinTimeout) {
  // Our own store, on this machine: a reply takes milliseconds, or the store is gone.
  storeOptions_.connectTimeout = std::chrono::seconds(2);
  storeOptions_.timeout = std::chrono::seconds(2);
}

void AgentStartProgress::start() {
  started_ = std::chrono::steady_clock::now();
  spdlog::info("waiting up to {} s (join_timeout) for {} to start (one agent per host: {}) and meet; Ctrl-C stops",
               secondsText(joinTimeout_), countedNoun(static_cast<long long>(hostCount_), "agent"), hostNames_);
  arm();
}

void AgentStartProgress::stop() {
  stopped_ = true;
  timer_.cancel();
}

void AgentStartProgress::arm() {
  timer_.expires_after(kReportEvery);
  timer_.async_wait([this](boost::system::error_code error) {
    if (error || stopped_) return;
    if (report()) arm();
  });
}

bool AgentStartProgress::report() {
  const auto waited = std::chrono::steady_clock::now() - started_;
  try {
    if (!store_) store_ = std::make_unique<TcpStore>(storeOptions_);
    if (store_->check({keys_ + rdzv::layout::complete(0)})) return false;
    const std::int64_t joined = store_->add(keys_ + rdzv::layout::count(0), 0);
    std::string missing;
    if (store_->check({keys_ + rdzv::layout::missing(0)})) {
      const nlohmann::json names = nlohmann::json::parse(store_->get(keys_ + rdzv::layout::missing(0)), nullptr, false);
      if (names.is_array() && !names.empty()) missing = "; not yet: " + names.dump();
    }
    spdlog::info("still waiting for the agents after {} s: {} of {} joined{}", secondsText(waited), joined, hostCount_,
                 missing);
  } catch (const Error& error) {
    spdlog::debug("could not read the agents' progress: {}", error.what());
  }
  return true;
}

}  // namespace pltrun
