#pragma once
// Watches one attempt's heartbeats: a socket per worker (heartbeat_reader.h) feeding a
// ProgressTracker, and with --stall-timeout a check every kCheckInterval that reports the
// workers that stalled (once: the group then diagnoses and stops them).

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "launcher/plan/stall_timeout.h"
#include "launcher/process/timer_seam.h"
#include "launcher/stall/heartbeat_reader.h"
#include "launcher/stall/progress_tracker.h"
#include "launcher/stall/stall_verdict.h"

namespace pltrun {

class StallMonitor {
 public:
  /// How often silence is checked: a stall is reported within this of the timeout.
  static constexpr std::chrono::milliseconds kCheckInterval{100};
  /// How long after the start, with no heartbeat from any worker (and at least the timeout),
  /// pltrun warns once that --stall-timeout watches nothing.
  static constexpr std::chrono::seconds kNoHeartbeatWarning{60};
  using OnStall = std::function<void(const std::vector<size_t>& stalled)>;
  /// Worker `index` beat at `at` (its counter, when the payload was one): one call per read
  /// of its socket that found any heartbeat.
  using OnBeat =
      std::function<void(size_t index, ProgressTracker::Clock::time_point at, std::optional<long long> counter)>;

  StallMonitor(boost::asio::io_context& context, std::unique_ptr<Timer> checkTimer,
               std::unique_ptr<Timer> readWindowTimer, std::optional<StallTimeout> timeout, size_t workers);

  /// Binds worker `index`'s heartbeat socket at `path`, before the worker starts (its first
  /// heartbeat must find it). Throws Error(System) when it cannot.
  void bind(size_t index, const std::string& path);
  /// Listens to every bound socket and, with a timeout, starts checking. `onBeat` (may be
  /// null: nothing more per heartbeat) observes each heartbeat read (--metrics).
  void start(OnStall onStall, OnBeat onBeat = nullptr);
  /// Worker `index` has exited: never stalled from now on.
  void ended(size_t index) { tracker_.ended(index); }
  /// Reads every heartbeat queued now (the group's workers have all ended).
  void readQueued() { heartbeats_.readAll(); }
  /// No more checks (the group is stopping).
  void stopChecking();

  /// Counter, silence and stalled flag of worker `index` now (the rest is the caller's).
  RankEvidence progressEvidence(size_t index) const;
  const ProgressTracker& tracker() const { return tracker_; }
  /// The silence allowed now: the fixed timeout, or what `auto` has worked out (none before
  /// it has seen enough heartbeats).
  std::optional<std::chrono::duration<double>> timeoutInForce() const;
  /// "4.0 s" or "auto (60.0 s)", for reports.
  std::string timeoutText() const;

 private:
  void scheduleCheck();
  void warnWhileNoHeartbeat();

  std::unique_ptr<Timer> checkTimer_;
  std::optional<StallTimeout> timeout_;
  ProgressTracker tracker_;
  HeartbeatReader heartbeats_;
  OnStall onStall_;
  bool checking_ = false;
  ProgressTracker::Clock::time_point started_;
  bool warnedNoHeartbeat_ = false;
};

}  // namespace pltrun
