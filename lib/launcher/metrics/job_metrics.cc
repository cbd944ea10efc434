#include "launcher/metrics/job_metrics.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "launcher/metrics/prometheus_text.h"

namespace pltrun {
namespace {

using Clock = JobMetrics::Clock;

double secondsSince(Clock::time_point then, Clock::time_point now) {
  return std::max(0.0, std::chrono::duration<double>(now - then).count());
}

MetricLabels rankLabels(const RankIdentity& rank) {
  return {{"rank", std::to_string(rank.rank)}, {"local_rank", std::to_string(rank.localRank)}};
}

MetricLabels rankInfoLabels(const RankIdentity& rank) {
  MetricLabels labels = rankLabels(rank);
  labels.emplace_back("pid", std::to_string(rank.pid));
  // Spelled as NVIDIA's DCGM exporter spells them, so that its metrics join on UUID.
  if (rank.gpuIndex) {
    labels.emplace_back("gpu", std::to_string(*rank.gpuIndex));
    if (!rank.gpuUuid.empty()) labels.emplace_back("UUID", rank.gpuUuid);
  }
  return labels;
}

}  // namespace

JobMetrics::JobMetrics(MetricsIdentity identity, Clock::time_point jobStarted)
    : identity_(std::move(identity)), goodput_(jobStarted) {}

void JobMetrics::attemptStarted(int /*attempt*/, Clock::time_point /*at*/) {
  ranks_.clear();
  goodput_.attemptStarted();
}

void JobMetrics::workerStarted(const RankIdentity& rank, Clock::time_point /*at*/) {
  Rank& known = ranks_[rank.rank];
  known.identity = rank;
  known.end.reset();
}

void JobMetrics::workerEnded(int rank, WorkerEnd end, Clock::time_point /*at*/) { ranks_[rank].end = end; }

void JobMetrics::beat(int rank, Clock::time_point at, std::optional<long long> counter) {
  // A datagram read after its worker ended still counts: the progress it reports was made.
  Rank& known = ranks_[rank];
  known.lastBeat = at;
  if (!counter) return;
  known.counter = counter;
  known.steps.beat(at, *counter);
  goodput_.progressed(at, *counter);
}

void JobMetrics::restarted(RestartCause cause, Clock::time_point at) {
  auto index = std::find(std::begin(kRestartCauses), std::end(kRestartCauses), cause) - std::begin(kRestartCauses);
  ++restarts_.at(static_cast<size_t>(index));
  goodput_.restarted(at);
}

void JobMetrics::rendezvousCompleted(std::chrono::duration<double> took) {
  ++rendezvous_.rounds;
  rendezvous_.seconds += std::max(0.0, took.count());
}

void JobMetrics::stallDetected() { ++stalls_; }

void JobMetrics::jobFinished(Clock::time_point at) { goodput_.finished(at); }

std::optional<double> JobMetrics::stepSeconds(int rank) const {
  auto found = ranks_.find(rank);
  if (found == ranks_.end()) return std::nullopt;
  return found->second.steps.medianSeconds();
}

Goodput JobMetrics::goodput(Clock::time_point now) const { return goodput_.at(now); }

std::string JobMetrics::render(Clock::time_point now) const {
  PrometheusText text(MetricLabels{{"job", identity_.job}, {"node", identity_.node}});
  renderWorkers(text);
  renderRanks(text, now);
  renderRankProgress(text);
  renderRestarts(text);
  text.family("pltrun_stalls_detected_total", MetricType::Counter,
              "Times the ranks were found stalled (--stall-timeout).");
  text.sample({}, stalls_);
  renderGoodput(text, now);
  return text.text();
}

void JobMetrics::renderWorkers(PrometheusText& text) const {
  long long counts[4] = {};  // running, succeeded, failed, stopped
  for (const auto& [rank, known] : ranks_) {
    if (!known.identity && !known.end) continue;                 // only beats: no worker of ours yet
    ++counts[known.end ? 1 + static_cast<int>(*known.end) : 0];  // WorkerEnd's order is the states'
  }
  text.family("pltrun_workers", MetricType::Gauge, "Workers of the current attempt, by state.");
  const char* states[4] = {"running", "succeeded", "failed", "stopped"};
  for (int state = 0; state < 4; ++state) text.sample({{"state", states[state]}}, counts[state]);
}

std::vector<const JobMetrics::Rank*> JobMetrics::listedRanks() const {
  std::vector<const Rank*> listed;
  for (const auto& [rank, known] : ranks_) {
    if (known.identity && !known.end) listed.push_back(&known);
  }
  return listed;
}

void JobMetrics::renderRanks(PrometheusText& text, Clock::time_point now) const {
  text.family("pltrun_rank_info", MetricType::Gauge,
              "1 per running rank, labelled with its pid and its GPU's index and UUID as NVIDIA's DCGM exporter "
              "labels them.");
  for (const Rank* known : listedRanks()) text.sample(rankInfoLabels(*known->identity), 1LL);
  text.family("pltrun_rank_heartbeat_age_seconds", MetricType::Gauge,
              "Seconds since the rank's last heartbeat (PLTRUN_HEARTBEAT), for ranks that sent one.");
  for (const Rank* known : listedRanks()) {
    if (known->lastBeat) text.sample(rankLabels(*known->identity), secondsSince(*known->lastBeat, now));
  }
}

void JobMetrics::renderRankProgress(PrometheusText& text) const {
  // Not "..._counter": promtool check metrics refuses a name that says a type (it is a gauge).
  text.family("pltrun_rank_progress", MetricType::Gauge,
              "The last progress counter (step) the rank's heartbeats sent.");
  for (const Rank* known : listedRanks()) {
    if (known->counter) text.sample(rankLabels(*known->identity), *known->counter);
  }
  text.family("pltrun_rank_step_seconds", MetricType::Gauge,
              "Seconds per step of the rank: the median of its recent steps, from its progress counters.");
  for (const Rank* known : listedRanks()) {
    if (std::optional<double> step = known->steps.medianSeconds()) text.sample(rankLabels(*known->identity), *step);
  }
}

void JobMetrics::renderRestarts(PrometheusText& text) const {
  text.family("pltrun_restarts_total", MetricType::Counter, "Restarts of the job's workers, by cause.");
  for (size_t index = 0; index < restarts_.size(); ++index) {
    text.sample({{"cause", restartCauseName(kRestartCauses[index])}}, restarts_[index]);
  }
  text.family("pltrun_rendezvous_rounds_total", MetricType::Counter, "Elastic rendezvous rounds this node joined.");
  text.sample({}, rendezvous_.rounds);
  text.family("pltrun_rendezvous_seconds_total", MetricType::Counter,
              "Seconds from this node's joins to its rounds' completion.");
  text.sample({}, rendezvous_.seconds);
}

void JobMetrics::renderGoodput(PrometheusText& text, Clock::time_point now) const {
  Goodput goodput = goodput_.at(now);
  text.family("pltrun_job_elapsed_seconds", MetricType::Gauge, "Seconds since the job started.");
  text.sample({}, goodput.elapsedSeconds);
  text.family("pltrun_productive_seconds_total", MetricType::Counter,
              "Seconds during which the progress counters went beyond anything reached before.");
  text.sample({}, goodput.productiveSeconds);
  text.family("pltrun_goodput_ratio", MetricType::Gauge,
              "Productive seconds over elapsed seconds (0 when the workers send no progress counter).");
  text.sample({}, goodput.ratio());
  text.family("pltrun_restart_lost_seconds", MetricType::Gauge,
              "Seconds each restart lost: from the last progress before it to the first after it.");
  for (const RestartLoss& loss : goodput_.restartLosses(now)) {
    text.sample({{"restart", std::to_string(loss.restart)}}, loss.seconds);
  }
  text.family("pltrun_lost_seconds_total", MetricType::Counter, "Seconds lost to every restart so far.");
  text.sample({}, goodput.lostSeconds);
}

}  // namespace pltrun
