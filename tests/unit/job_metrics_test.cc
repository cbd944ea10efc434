// What --metrics exposes (launcher/metrics/job_metrics.h), from made-up events and times:
// every metric family, goodput as its header defines it, the seconds per step, the restart
// causes, and render()'s text as Prometheus's exposition format 0.0.4 reads it.

#include "launcher/metrics/job_metrics.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "launcher/group/failure_report.h"
#include "launcher/metrics/goodput_clock.h"
#include "launcher/metrics/prometheus_text.h"
#include "launcher/metrics/restart_cause.h"
#include "launcher/metrics/step_times.h"

using namespace pltrun;
using Clock = JobMetrics::Clock;

namespace {

const Clock::time_point kStart = Clock::time_point{} + std::chrono::hours(1);

Clock::time_point at(double seconds) {
  return kStart + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

JobMetrics metrics() { return JobMetrics({"run-1", "node-a"}, kStart); }

RankIdentity rankIdentity(int rank, pid_t pid, std::optional<int> gpu = std::nullopt, std::string uuid = "") {
  RankIdentity identity;
  identity.rank = rank;
  identity.localRank = rank % 2;
  identity.pid = pid;
  identity.gpuIndex = gpu;
  identity.gpuUuid = std::move(uuid);
  return identity;
}

// The series' labels after job and node, as render() writes them.
std::string series(const std::string& name, const std::string& labels = "") {
  return name + "{job=\"run-1\",node=\"node-a\"" + (labels.empty() ? "" : "," + labels) + "}";
}

std::string rankSeries(const std::string& name, int rank) {
  return series(name, "rank=\"" + std::to_string(rank) + "\",local_rank=\"" + std::to_string(rank % 2) + "\"");
}

// The value of the sample named `name` (with its labels) in `text`; none when absent.
std::optional<double> valueOf(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) != 0) continue;
    std::string value = line.substr(name.size() + 1);
    if (value == "+Inf") return INFINITY;
    if (value == "-Inf") return -INFINITY;
    if (value == "NaN") return NAN;
    return std::stod(value);
  }
  return std::nullopt;
}

double valueIn(const std::string& text, const std::string& name) {
  std::optional<double> value = valueOf(text, name);
  INFO(name << " in:\n" << text);
  REQUIRE(value);
  return *value;
}

int linesStartingWith(const std::string& text, const std::string& start) {
  int count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) count += line.rfind(start, 0) == 0 ? 1 : 0;
  return count;
}

// The format's grammar for one sample line: name, optional {label="value",...}, a space, a
// number Go's ParseFloat reads. Returns what is wrong; empty when nothing. `name` gets the
// metric name, `series` the name with its labels.
std::string sampleFault(const std::string& line, std::string& name, std::string& series) {
  auto nameChar = [](char c, bool first) {
    return std::isalpha(c) || c == '_' || c == ':' || (!first && std::isdigit(c));
  };
  size_t pos = 0;
  while (pos < line.size() && nameChar(line[pos], pos == 0)) ++pos;
  if (pos == 0) return "no metric name";
  name = line.substr(0, pos);
  if (pos < line.size() && line[pos] == '{') {
    ++pos;
    while (pos < line.size() && line[pos] != '}') {
      size_t start = pos;
      while (pos < line.size() && nameChar(line[pos], pos == start)) ++pos;
      if (pos == start || line.compare(pos, 2, "=\"") != 0) return "a malformed label name";
      for (pos += 2; pos < line.size() && line[pos] != '"'; ++pos) {
        if (line[pos] == '\\' &&
            (pos + 1 == line.size() || std::string("\\\"n").find(line[++pos]) == std::string::npos)) {
          return "a bad escape in a label value";
        }
      }
      if (pos++ >= line.size()) return "an unterminated label value";
      if (pos < line.size() && line[pos] == ',') ++pos;
    }
    if (pos++ >= line.size()) return "no closing brace";
  }
  series = line.substr(0, pos);
  if (pos >= line.size() || line[pos] != ' ') return "no space before the value";
  std::string value = line.substr(pos + 1);
  if (value == "+Inf" || value == "-Inf" || value == "NaN") return "";
  size_t used = 0;
  try {
    std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  return used == value.size() && !value.empty() ? "" : "a value that is no number: " + value;
}

// What is wrong with `text` as the exposition format 0.0.4 render() means to write, one
// line per fault; empty when valid: every sample's family has # HELP then # TYPE before it,
// each family once, its samples together, no series twice, a newline at the end.
std::vector<std::string> expositionFaults(const std::string& text) {
  std::vector<std::string> faults;
  std::set<std::string> helped, typed, done, seen;
  std::string current;
  if (text.empty() || text.back() != '\n') faults.push_back("the text does not end with a newline");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string hash, keyword, name, type;
    words >> hash >> keyword >> name >> type;
    if (hash == "#" && keyword == "HELP") {
      if (!helped.insert(name).second || done.count(name)) faults.push_back("a second # HELP of " + name);
      if (name != current) done.insert(current);
      current = name;
    } else if (hash == "#" && keyword == "TYPE") {
      if (!helped.count(name) || name != current) faults.push_back("# TYPE of " + name + " not after its # HELP");
      if (!typed.insert(name).second) faults.push_back("a second # TYPE of " + name);
      if (type != "counter" && type != "gauge") faults.push_back("an unexpected type " + type);
    } else {
      std::string sample, labelled;
      std::string fault = sampleFault(line, sample, labelled);
      if (!fault.empty()) faults.push_back(fault + ": " + line);
      if (!typed.count(sample)) faults.push_back("a sample before its # HELP and # TYPE: " + line);
      if (sample != current) faults.push_back("a sample away from its family's: " + line);
      if (!seen.insert(labelled).second) faults.push_back("a series twice: " + line);
    }
  }
  return faults;
}

}  // namespace

TEST_CASE("exposition check: the test's own checker finds what it is meant to find", "[metrics]") {
  std::string valid = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\\\"\\\\\\n\"} 2\n";
  CHECK(expositionFaults(valid).empty());
  CHECK_FALSE(expositionFaults("a_total 2\n").empty());                                            // no HELP, no TYPE
  CHECK_FALSE(expositionFaults("# HELP a A.\n# TYPE a gauge\na 1").empty());                       // no final newline
  CHECK_FALSE(expositionFaults(valid + "# HELP a_total A.\n# TYPE a_total counter\n").empty());    // twice
  CHECK_FALSE(expositionFaults(valid + "# HELP b B.\n# TYPE b gauge\nb 1\na_total 3\n").empty());  // apart
  CHECK_FALSE(expositionFaults("# HELP a A.\n# TYPE a gauge\na{x=\"\\t\"} 1\n").empty());          // a bad escape
  CHECK_FALSE(expositionFaults("# HELP a A.\n# TYPE a gauge\na 1\na 2\n").empty());                // a series twice
  CHECK_FALSE(expositionFaults("# HELP a A.\n# TYPE a gauge\na one\n").empty());
}

TEST_CASE("job metrics: every worker state is listed from 0 and counts the attempt's workers", "[metrics]") {
  JobMetrics job = metrics();
  std::string empty = job.render(at(0));
  for (const char* state : {"running", "succeeded", "failed", "stopped"}) {
    CHECK(valueIn(empty, series("pltrun_workers", std::string("state=\"") + state + "\"")) == 0);
  }
  job.attemptStarted(0, at(0));
  for (int rank = 0; rank < 4; ++rank) job.workerStarted(rankIdentity(rank, 100 + rank), at(1));
  job.workerEnded(0, WorkerEnd::Succeeded, at(5));
  job.workerEnded(1, WorkerEnd::Failed, at(6));
  job.workerEnded(2, WorkerEnd::Stopped, at(7));
  std::string text = job.render(at(8));
  CHECK(valueIn(text, series("pltrun_workers", "state=\"running\"")) == 1);
  CHECK(valueIn(text, series("pltrun_workers", "state=\"succeeded\"")) == 1);
  CHECK(valueIn(text, series("pltrun_workers", "state=\"failed\"")) == 1);
  CHECK(valueIn(text, series("pltrun_workers", "state=\"stopped\"")) == 1);
  job.attemptStarted(1, at(9));  // the previous attempt's workers are forgotten
  job.workerStarted(rankIdentity(0, 200), at(10));
  text = job.render(at(11));
  CHECK(valueIn(text, series("pltrun_workers", "state=\"running\"")) == 1);
  CHECK(valueIn(text, series("pltrun_workers", "state=\"failed\"")) == 0);
}

TEST_CASE("job metrics: rank info carries the pid, and gpu and UUID only for a rank with a GPU", "[metrics]") {
  JobMetrics job = metrics();
  job.workerStarted(rankIdentity(0, 4242, 3, "GPU-5f1c"), at(0));
  job.workerStarted(rankIdentity(1, 4243), at(0));
  job.workerStarted(rankIdentity(2, 4244, 0), at(0));  // a GPU whose UUID is not known
  std::string text = job.render(at(1));
  CHECK(valueIn(text, series("pltrun_rank_info",
                             "rank=\"0\",local_rank=\"0\",pid=\"4242\",gpu=\"3\",UUID=\"GPU-5f1c\"")) == 1);
  CHECK(valueIn(text, series("pltrun_rank_info", "rank=\"1\",local_rank=\"1\",pid=\"4243\"")) == 1);
  CHECK(valueIn(text, series("pltrun_rank_info", "rank=\"2\",local_rank=\"0\",pid=\"4244\",gpu=\"0\"")) == 1);
  CHECK(linesStartingWith(text, "pltrun_rank_info{") == 3);
}

TEST_CASE("job metrics: heartbeat age grows with now from each rank's last beat, none before its first", "[metrics]") {
  JobMetrics job = metrics();
  job.workerStarted(rankIdentity(0, 10), at(0));
  job.workerStarted(rankIdentity(1, 11), at(0));
  job.beat(0, at(2), std::nullopt);
  job.beat(0, at(4), std::nullopt);
  CHECK(valueIn(job.render(at(4.5)), rankSeries("pltrun_rank_heartbeat_age_seconds", 0)) == Approx(0.5));
  CHECK(valueIn(job.render(at(10)), rankSeries("pltrun_rank_heartbeat_age_seconds", 0)) == Approx(6));
  CHECK_FALSE(valueOf(job.render(at(10)), rankSeries("pltrun_rank_heartbeat_age_seconds", 1)));
  job.beat(1, at(9), 1);
  CHECK(valueIn(job.render(at(10)), rankSeries("pltrun_rank_heartbeat_age_seconds", 1)) == Approx(1));
}

TEST_CASE("job metrics: the progress counter is the last one sent, and a beat without one keeps it", "[metrics]") {
  JobMetrics job = metrics();
  job.workerStarted(rankIdentity(0, 10), at(0));
  job.beat(0, at(1), std::nullopt);
  CHECK_FALSE(valueOf(job.render(at(1)), rankSeries("pltrun_rank_progress", 0)));
  job.beat(0, at(2), 7);
  job.beat(0, at(3), std::nullopt);
  CHECK(valueIn(job.render(at(3)), rankSeries("pltrun_rank_progress", 0)) == 7);
  job.beat(0, at(4), 5);  // the worker's own number, even when it goes back
  CHECK(valueIn(job.render(at(4)), rankSeries("pltrun_rank_progress", 0)) == 5);
}

TEST_CASE("step times: the median of recent steps, a counter advancing by more than 1 divides its time", "[metrics]") {
  StepTimes steps;
  CHECK_FALSE(steps.medianSeconds());
  steps.beat(at(0), 0);
  CHECK_FALSE(steps.medianSeconds());  // one beat is no step
  steps.beat(at(2), 1);
  CHECK(*steps.medianSeconds() == Approx(2));
  steps.beat(at(5), 4);                          // 3 steps in 3 s
  CHECK(*steps.medianSeconds() == Approx(1.5));  // the mean of the middle two: 1 and 2
  steps.beat(at(6), 4);                          // the same counter measures nothing
  steps.beat(at(35), 5);                         // one slow step (a checkpoint): 30 s from the first beat of 4
  CHECK(*steps.medianSeconds() == Approx(2));    // 1, 2, 30
  steps.beat(at(36), 2);                         // the worker restarted its count: no step
  steps.beat(at(39), 3);
  CHECK(*steps.medianSeconds() == Approx(2.5));  // 1, 2, 3, 30
}

TEST_CASE("step times: only the most recent steps count", "[metrics]") {
  StepTimes steps;
  long long counter = 0;
  double time = 0;
  steps.beat(at(time), counter);
  for (int slow = 0; slow < 20; ++slow) steps.beat(at(time += 10), ++counter);
  for (size_t fast = 0; fast < StepTimes::kRecentSteps / 2 + 1; ++fast) steps.beat(at(time += 1), ++counter);
  CHECK(*steps.medianSeconds() == Approx(1));  // the 20 slow ones before are mostly forgotten
}

TEST_CASE("job metrics: step seconds per rank from its counters, and beats without a counter measure nothing",
          "[metrics]") {
  JobMetrics job = metrics();
  job.workerStarted(rankIdentity(0, 10), at(0));
  job.workerStarted(rankIdentity(1, 11), at(0));
  job.beat(0, at(1), 10);
  job.beat(0, at(2), std::nullopt);
  job.beat(0, at(3), std::nullopt);
  job.beat(0, at(5), 20);  // 10 steps in 4 s
  job.beat(1, at(1), std::nullopt);
  job.beat(1, at(2), std::nullopt);
  CHECK(*job.stepSeconds(0) == Approx(0.4));
  CHECK_FALSE(job.stepSeconds(1));
  CHECK_FALSE(job.stepSeconds(7));
  std::string text = job.render(at(6));
  CHECK(valueIn(text, rankSeries("pltrun_rank_step_seconds", 0)) == Approx(0.4));
  CHECK_FALSE(valueOf(text, rankSeries("pltrun_rank_step_seconds", 1)));
}

TEST_CASE("job metrics: restarts are counted by cause, every cause listed from 0", "[metrics]") {
  JobMetrics job = metrics();
  std::string text = job.render(at(0));
  for (RestartCause cause : kRestartCauses) {
    CHECK(valueIn(text, series("pltrun_restarts_total", std::string("cause=\"") + restartCauseName(cause) + "\"")) ==
          0);
  }
  CHECK(linesStartingWith(text, "pltrun_restarts_total{") == 8);
  job.restarted(RestartCause::Exit, at(1));
  job.restarted(RestartCause::Stall, at(2));
  job.restarted(RestartCause::Exit, at(3));
  job.restarted(RestartCause::NodeLost, at(4));
  text = job.render(at(5));
  CHECK(valueIn(text, series("pltrun_restarts_total", "cause=\"exit\"")) == 2);
  CHECK(valueIn(text, series("pltrun_restarts_total", "cause=\"stall\"")) == 1);
  CHECK(valueIn(text, series("pltrun_restarts_total", "cause=\"node_lost\"")) == 1);
  CHECK(valueIn(text, series("pltrun_restarts_total", "cause=\"signal\"")) == 0);
  CHECK(valueIn(text, series("pltrun_restarts_total", "cause=\"health\"")) == 0);
}

TEST_CASE("job metrics: rendezvous rounds and their seconds add up, stalls are counted", "[metrics]") {
  JobMetrics job = metrics();
  std::string text = job.render(at(0));
  CHECK(valueIn(text, series("pltrun_rendezvous_rounds_total")) == 0);
  CHECK(valueIn(text, series("pltrun_rendezvous_seconds_total")) == 0);
  CHECK(valueIn(text, series("pltrun_stalls_detected_total")) == 0);
  job.rendezvousCompleted(std::chrono::milliseconds(1500));
  job.rendezvousCompleted(std::chrono::milliseconds(250));
  job.stallDetected();
  text = job.render(at(1));
  CHECK(valueIn(text, series("pltrun_rendezvous_rounds_total")) == 2);
  CHECK(valueIn(text, series("pltrun_rendezvous_seconds_total")) == Approx(1.75));
  CHECK(valueIn(text, series("pltrun_stalls_detected_total")) == 1);
}

TEST_CASE("job metrics: a new attempt forgets the ranks' heartbeats, pids and step times, keeps the counts",
          "[metrics]") {
  JobMetrics job = metrics();
  job.attemptStarted(0, at(0));
  job.workerStarted(rankIdentity(0, 10, 0, "GPU-a"), at(0));
  job.beat(0, at(1), 1);
  job.beat(0, at(2), 2);
  job.restarted(RestartCause::Signal, at(3));
  job.stallDetected();
  job.attemptStarted(1, at(4));
  job.workerStarted(rankIdentity(0, 20, 0, "GPU-a"), at(4));
  std::string text = job.render(at(5));
  CHECK(valueIn(text, series("pltrun_rank_info", "rank=\"0\",local_rank=\"0\",pid=\"20\",gpu=\"0\",UUID=\"GPU-a\"")) ==
        1);
  CHECK(text.find("pid=\"10\"") == std::string::npos);
  CHECK_FALSE(valueOf(text, rankSeries("pltrun_rank_heartbeat_age_seconds", 0)));
  CHECK_FALSE(valueOf(text, rankSeries("pltrun_rank_progress", 0)));
  CHECK_FALSE(job.stepSeconds(0));
  CHECK(valueIn(text, series("pltrun_restarts_total", "cause=\"signal\"")) == 1);
  CHECK(valueIn(text, series("pltrun_stalls_detected_total")) == 1);
}

TEST_CASE("job metrics: an ended rank has no per-rank series, so it never looks stuck", "[metrics]") {
  JobMetrics job = metrics();
  job.workerStarted(rankIdentity(0, 10), at(0));
  job.workerStarted(rankIdentity(1, 11), at(0));
  for (int rank : {0, 1}) {
    job.beat(rank, at(1), 1);
    job.beat(rank, at(2), 2);
  }
  job.workerEnded(1, WorkerEnd::Succeeded, at(3));
  job.beat(1, at(4), 3);  // a datagram read late: no series, but its progress was made
  CHECK(job.goodput(at(100)).productiveSeconds == Approx(3));
  std::string text = job.render(at(100));
  CHECK(valueIn(text, rankSeries("pltrun_rank_heartbeat_age_seconds", 0)) == Approx(98));
  for (const char* name : {"pltrun_rank_heartbeat_age_seconds", "pltrun_rank_progress", "pltrun_rank_step_seconds"}) {
    CHECK_FALSE(valueOf(text, rankSeries(name, 1)));
  }
  CHECK(linesStartingWith(text, "pltrun_rank_info{") == 1);
}

TEST_CASE("goodput: only raises of the highest counter are productive, the first of an attempt is start-up",
          "[metrics]") {
  JobMetrics job = metrics();
  job.attemptStarted(0, at(0));
  job.workerStarted(rankIdentity(0, 10), at(0));
  job.workerStarted(rankIdentity(1, 11), at(0));
  job.beat(0, at(10), 1);  // start-up: 10 s, not productive
  job.beat(1, at(11), 1);  // no raise
  CHECK(job.goodput(at(11)).productiveSeconds == 0);
  job.beat(1, at(12), 2);  // a raise by another rank: 2 s productive
  job.beat(0, at(13), 2);
  job.beat(0, at(14), std::nullopt);
  job.beat(0, at(15), 4);  // 3 s more
  Goodput goodput = job.goodput(at(20));
  CHECK(goodput.productiveSeconds == Approx(5));
  CHECK(goodput.elapsedSeconds == Approx(20));
  CHECK(goodput.lostSeconds == 0);
  CHECK(goodput.ratio() == Approx(0.25));
  std::string text = job.render(at(20));
  CHECK(valueIn(text, series("pltrun_productive_seconds_total")) == Approx(5));
  CHECK(valueIn(text, series("pltrun_job_elapsed_seconds")) == Approx(20));
  CHECK(valueIn(text, series("pltrun_goodput_ratio")) == Approx(0.25));
  CHECK(valueIn(text, series("pltrun_lost_seconds_total")) == 0);
  CHECK(linesStartingWith(text, "pltrun_restart_lost_seconds{") == 0);
}

TEST_CASE("goodput: a restart's lost seconds grow until the first raise after it, then stay", "[metrics]") {
  JobMetrics job = metrics();
  job.attemptStarted(0, at(0));
  job.beat(0, at(10), 1);
  job.beat(0, at(12), 2);
  job.beat(0, at(14), 3);  // the last raise before the restart: 4 s productive so far
  job.restarted(RestartCause::Exit, at(15));
  CHECK(job.goodput(at(15)).lostSeconds == Approx(1));
  CHECK(valueIn(job.render(at(20)), series("pltrun_restart_lost_seconds", "restart=\"1\"")) == Approx(6));
  job.attemptStarted(1, at(21));
  job.beat(0, at(30), 1);  // redone steps: no raise, still lost
  job.beat(0, at(32), 2);
  job.beat(0, at(34), 3);
  CHECK(job.goodput(at(34)).lostSeconds == Approx(20));
  job.beat(0, at(36), 4);  // the first raise after it: productive time starts again from here
  job.beat(0, at(38), 5);
  std::string text = job.render(at(50));
  CHECK(valueIn(text, series("pltrun_restart_lost_seconds", "restart=\"1\"")) == Approx(22));
  CHECK(valueIn(text, series("pltrun_lost_seconds_total")) == Approx(22));
  CHECK(valueIn(text, series("pltrun_productive_seconds_total")) == Approx(6));
  Goodput goodput = job.goodput(at(50));
  CHECK(goodput.productiveSeconds + goodput.lostSeconds <= goodput.elapsedSeconds);
}

TEST_CASE("goodput: the ratio is below 1 after a restart", "[metrics]") {
  JobMetrics job = metrics();
  job.attemptStarted(0, at(0));
  for (int step = 0; step < 10; ++step) job.beat(0, at(step), step);
  double before = job.goodput(at(9)).ratio();
  job.restarted(RestartCause::Stall, at(9.5));
  job.attemptStarted(1, at(10));
  for (int step = 0; step < 20; ++step) job.beat(0, at(11 + step), step);
  Goodput goodput = job.goodput(at(30));
  CHECK(goodput.ratio() < before);
  CHECK(goodput.ratio() < 1);
  CHECK(goodput.ratio() > 0);
  CHECK(goodput.lostSeconds > 0);
}

TEST_CASE("goodput: workers that send no counter give a ratio of 0", "[metrics]") {
  JobMetrics job = metrics();
  job.workerStarted(rankIdentity(0, 10), at(0));
  for (int second = 1; second < 10; ++second) job.beat(0, at(second), std::nullopt);
  Goodput goodput = job.goodput(at(10));
  CHECK(goodput.ratio() == 0);
  CHECK(goodput.elapsedSeconds == Approx(10));
  CHECK(valueIn(job.render(at(10)), series("pltrun_goodput_ratio")) == 0);
  CHECK(JobMetrics({"j", "n"}, kStart).goodput(kStart).ratio() == 0);  // no time yet
}

TEST_CASE("goodput: two restarts with no raise between lose each its own stretch, never a second twice", "[metrics]") {
  JobMetrics job = metrics();
  job.attemptStarted(0, at(0));
  job.restarted(RestartCause::Exit, at(5));  // before any raise: lost from the job's start
  job.attemptStarted(1, at(6));
  job.restarted(RestartCause::Signal, at(8));  // no raise since: the first restart's loss ends here
  job.attemptStarted(2, at(9));
  job.beat(0, at(12), 1);
  std::string text = job.render(at(20));
  CHECK(valueIn(text, series("pltrun_restart_lost_seconds", "restart=\"1\"")) == Approx(8));
  CHECK(valueIn(text, series("pltrun_restart_lost_seconds", "restart=\"2\"")) == Approx(4));
  CHECK(valueIn(text, series("pltrun_lost_seconds_total")) == Approx(12));
}

TEST_CASE("goodput: jobFinished stops elapsed time and an open restart's loss", "[metrics]") {
  JobMetrics job = metrics();
  job.attemptStarted(0, at(0));
  job.beat(0, at(1), 1);
  job.beat(0, at(3), 2);
  job.restarted(RestartCause::Exit, at(4));
  job.jobFinished(at(6));
  job.beat(0, at(7), 3);  // after the end: nothing counts
  Goodput goodput = job.goodput(at(100));
  CHECK(goodput.elapsedSeconds == Approx(6));
  CHECK(goodput.productiveSeconds == Approx(2));
  CHECK(goodput.lostSeconds == Approx(3));
  std::string text = job.render(at(100));
  CHECK(valueIn(text, series("pltrun_job_elapsed_seconds")) == Approx(6));
  CHECK(valueIn(text, series("pltrun_restart_lost_seconds", "restart=\"1\"")) == Approx(3));
  CHECK(valueIn(text, series("pltrun_goodput_ratio")) == Approx(2.0 / 6));
}

TEST_CASE("goodput: the most recent 100 restarts are listed, the total keeps every one", "[metrics]") {
  GoodputClock clock(kStart);
  double time = 0;
  for (long long counter = 0; counter < 150; ++counter) {
    clock.attemptStarted();
    clock.progressed(at(time += 1), counter);  // the first raise after the previous restart
    clock.restarted(at(time += 1));            // each loses 2 s: from its raise to the next
  }
  std::deque<RestartLoss> kept = clock.restartLosses(at(time));
  REQUIRE(kept.size() == GoodputClock::kKeptRestarts);
  CHECK(kept.front().restart == 51);
  CHECK(kept.back().restart == 150);
  CHECK(kept.front().seconds == Approx(2));  // from the raise before it to the next
  CHECK(kept.back().seconds == Approx(1));   // open: from its raise to now
  CHECK(clock.at(at(time)).lostSeconds == Approx(299));
}

TEST_CASE("prometheus text: label values escape backslash, double quote and newline, help backslash and newline",
          "[metrics]") {
  CHECK(escapedLabelValue("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(escapedLabelValue("plain-text_1.2") == "plain-text_1.2");
  CHECK(escapedHelp("a\\b\"c\nd") == "a\\\\b\"c\\nd");
  PrometheusText text(MetricLabels{{"job", "x\"y"}});
  text.family("m", MetricType::Gauge, "line one\nline two");
  text.sample({{"path", "C:\\tmp"}}, 1LL);
  CHECK(text.text() == "# HELP m line one\\nline two\n# TYPE m gauge\nm{job=\"x\\\"y\",path=\"C:\\\\tmp\"} 1\n");
}

TEST_CASE("prometheus text: numbers as Prometheus reads them", "[metrics]") {
  CHECK(metricNumber(0) == "0");
  CHECK(metricNumber(2.5) == "2.5");
  CHECK(metricNumber(0.1) == "0.1");
  CHECK(metricNumber(-3) == "-3");
  CHECK(std::stod(metricNumber(1e20)) == 1e20);
  CHECK(std::stod(metricNumber(1.0 / 3)) == 1.0 / 3);  // the shortest text that reads back the same
  CHECK(metricNumber(INFINITY) == "+Inf");
  CHECK(metricNumber(-INFINITY) == "-Inf");
  CHECK(metricNumber(NAN) == "NaN");
}

TEST_CASE("prometheus text: a family is written once, with its samples together", "[metrics]") {
  PrometheusText text;
  CHECK_THROWS_AS(text.sample({}, 1LL), std::logic_error);  // no family yet
  text.family("a_total", MetricType::Counter, "A.");
  text.sample({}, 1LL);
  text.family("b", MetricType::Gauge, "B.");
  CHECK_THROWS_AS(text.family("a_total", MetricType::Counter, "A again."), std::logic_error);
  CHECK(text.text() == "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n# HELP b B.\n# TYPE b gauge\n");
}

namespace {

// A job with every family's samples: ranks with and without GPUs, beats, counters, steps,
// ends, restarts, rounds, stalls; a job name and node that need escaping.
JobMetrics busyJob() {
  JobMetrics job({"run \"7\"\\x\nend", "node-a"}, kStart);
  job.attemptStarted(0, at(0));
  job.workerStarted(rankIdentity(0, 100, 0, "GPU-11111111-2222-3333-4444-555555555555"), at(0));
  job.workerStarted(rankIdentity(1, 101, 1, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"), at(0));
  job.workerStarted(rankIdentity(2, 102), at(0));
  job.workerStarted(rankIdentity(3, 103), at(0));
  for (int step = 0; step < 5; ++step) {
    for (int rank = 0; rank < 3; ++rank) job.beat(rank, at(1 + step + 0.1 * rank), step);
  }
  job.beat(3, at(2), std::nullopt);
  job.restarted(RestartCause::Exit, at(7));
  job.attemptStarted(1, at(8));
  job.rendezvousCompleted(std::chrono::milliseconds(1234));
  for (int rank = 0; rank < 3; ++rank) job.workerStarted(rankIdentity(rank, 200 + rank, rank), at(8));
  for (int step = 3; step < 9; ++step) job.beat(0, at(6 + step), step);
  job.beat(1, at(10), 3);
  job.workerEnded(2, WorkerEnd::Failed, at(11));
  job.stallDetected();
  return job;
}

}  // namespace

TEST_CASE("job metrics: render() is valid exposition text, each family once with HELP and TYPE first", "[metrics]") {
  std::string text = busyJob().render(at(20));
  std::vector<std::string> faults = expositionFaults(text);
  INFO(text);
  CHECK(faults == std::vector<std::string>{});
  CHECK(text.find("job=\"run \\\"7\\\"\\\\x\\nend\"") != std::string::npos);  // escaped once, where it is
  CHECK(linesStartingWith(text, "pltrun_rank_info{") == 2);
  CHECK(linesStartingWith(text, "pltrun_rank_step_seconds{") == 1);
  CHECK(linesStartingWith(text, "pltrun_restart_lost_seconds{") == 1);
}

TEST_CASE("job metrics: the families are issue 47's, of their types, and nothing else", "[metrics]") {
  std::map<std::string, std::string> families;
  std::istringstream lines(busyJob().render(at(20)));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string hash, keyword, name, type;
    words >> hash >> keyword >> name >> type;
    if (hash == "#" && keyword == "TYPE") families[name] = type;
  }
  std::map<std::string, std::string> expected = {
      {"pltrun_workers", "gauge"},
      {"pltrun_rank_info", "gauge"},
      {"pltrun_rank_heartbeat_age_seconds", "gauge"},
      {"pltrun_rank_progress", "gauge"},
      {"pltrun_rank_step_seconds", "gauge"},
      {"pltrun_restarts_total", "counter"},
      {"pltrun_rendezvous_rounds_total", "counter"},
      {"pltrun_rendezvous_seconds_total", "counter"},
      {"pltrun_stalls_detected_total", "counter"},
      {"pltrun_job_elapsed_seconds", "gauge"},
      {"pltrun_productive_seconds_total", "counter"},
      {"pltrun_goodput_ratio", "gauge"},
      {"pltrun_restart_lost_seconds", "gauge"},
      {"pltrun_lost_seconds_total", "counter"},
  };
  CHECK(families == expected);
}

TEST_CASE("restart cause: a stall, else an expired FileTimer, else a signal, else an exit", "[metrics]") {
  WorkerFailure failure;
  failure.end.exitCode = 3;
  CHECK(restartCauseOf(failure) == RestartCause::Exit);
  failure.end = ProcessEnd{0, 11};
  CHECK(restartCauseOf(failure) == RestartCause::Signal);
  failure.expiredTimer = "scope 'step' (SIGKILL)";
  CHECK(restartCauseOf(failure) == RestartCause::Timer);
  failure.stall = StallReport{};
  CHECK(restartCauseOf(failure) == RestartCause::Stall);
  failure.expiredTimer.clear();
  failure.end = ProcessEnd{1, 0};
  CHECK(restartCauseOf(failure) == RestartCause::Stall);
}

TEST_CASE("restart cause: each name reads back as its cause, any other text as none", "[metrics]") {
  std::set<std::string> names;
  for (RestartCause cause : kRestartCauses) {
    names.insert(restartCauseName(cause));
    CHECK(restartCauseFromName(restartCauseName(cause)) == cause);
  }
  CHECK(names ==
        std::set<std::string>{"exit", "signal", "stall", "timer", "node_lost", "node_joined", "health", "other"});
  CHECK_FALSE(restartCauseFromName(""));
  CHECK_FALSE(restartCauseFromName("Exit"));
  CHECK_FALSE(restartCauseFromName("exit "));
}
