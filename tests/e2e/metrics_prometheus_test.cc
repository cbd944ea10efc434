// Issue 47's "done when": Debian's real Prometheus scraping a live 4-worker pltrun job
// (--metrics 127.0.0.1:0) on loopback, every check made through Prometheus's query API, as an
// operator's dashboard or alert would see it: restarts 0 → 1 after a worker's crash, a stalled
// rank's heartbeat age growing while the others' stay small, goodput below 1 after the
// restart, `promtool check metrics` on the live exposition, the README's three PromQL
// examples evaluated on live data (the DCGM join against a stand-in exporter whose GPUs have
// the fake GPUs' UUIDs).

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "e2e/loopback_http.h"
#include "e2e/metrics_job.h"
#include "e2e/prometheus_server.h"
#include "e2e/static_http_server.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

const std::string kRunId = "prom-job";
constexpr auto kSeen = 30s;  // time for a change to go through a scrape (1 s) and the job

// What NVIDIA's DCGM exporter serves for four GPUs (its labels: gpu, UUID, device, ...).
std::string dcgmExposition() {
  std::string text = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
  const std::vector<std::string> uuids = metricsJobGpuUuids();
  for (size_t gpu = 0; gpu < uuids.size(); ++gpu) {
    text += "DCGM_FI_DEV_GPU_UTIL{gpu=\"" + std::to_string(gpu) + "\",UUID=\"" + uuids[gpu] + "\",device=\"nvidia" +
            std::to_string(gpu) + "\",modelName=\"NVIDIA H100 80GB HBM3\"} " + std::to_string(90 + gpu) + "\n";
  }
  return text;
}

// The ```promql blocks of README.md, one query per line that is not a comment.
std::vector<std::string> readmeQueries() {
  std::ifstream readme(TESTS_SOURCE_DIR "/../README.md");
  std::vector<std::string> queries;
  bool inside = false;
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("```", 0) == 0) {
      inside = !inside && line == "```promql";
    } else if (inside && !line.empty() && line[0] != '#') {
      queries.push_back(line);
    }
  }
  return queries;
}

double sum(const std::vector<PromSample>& samples) {
  double total = 0;
  for (const PromSample& sample : samples) total += sample.value;
  return total;
}

// value by the label `name` ("rank", "cause").
std::map<std::string, double> by(const std::vector<PromSample>& samples, const std::string& name) {
  std::map<std::string, double> values;
  for (const PromSample& sample : samples) values[sample.label(name)] = sample.value;
  return values;
}

std::string describe(const std::vector<PromSample>& samples) {
  std::ostringstream text;
  for (const PromSample& sample : samples) {
    text << "{";
    for (const auto& [name, value] : sample.labels) text << name << "=" << value << ",";
    text << "} " << sample.value << "\n";
  }
  return text.str();
}

// The names of the exposition's `# TYPE NAME TYPE` lines, one a line, sorted; " (no HELP)"
// after a name without its # HELP line.
std::string familiesOf(const std::string& exposition) {
  std::set<std::string> families;
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string hash, kind, name;
    words >> hash >> kind >> name;
    if (hash != "#" || kind != "TYPE") continue;
    families.insert(name + (exposition.find("# HELP " + name + " ") == std::string::npos ? " (no HELP)" : ""));
  }
  std::string text;
  for (const std::string& family : families) text += family + "\n";
  return text;
}

std::string restarts() { return "pltrun_restarts_total{job=\"" + kRunId + "\"}"; }
std::string ages() { return "pltrun_rank_heartbeat_age_seconds{job=\"" + kRunId + "\"}"; }

// Every rank beats, every cause of restart is counted from 0, and DCGM's GPUs join to ranks.
void checkFirstAttempt(const PrometheusServer& prometheus) {
  const PromWait beating = prometheus.waitFor(
      ages(), [](const auto& all) { return all.size() == 4; }, kSeen);
  INFO(describe(beating.last) << prometheus.log());
  REQUIRE(beating.met);
  for (const PromSample& rank : beating.last) {
    CHECK(rank.label("exported_job").empty());  // honor_labels: pltrun's job label kept
    CHECK_FALSE(rank.label("node").empty());
  }
  const std::vector<PromSample> before = prometheus.query(restarts());
  INFO(describe(before));
  CHECK(before.size() == 8);  // exit, signal, stall, timer, node_lost, node_joined, health, other
  CHECK(sum(before) == 0);
  CHECK(by(before, "cause").count("exit") == 1);

  const std::string join = "DCGM_FI_DEV_GPU_UTIL * on(UUID) group_left(rank) pltrun_rank_info{job=\"" + kRunId + "\"}";
  const PromWait joined = prometheus.waitFor(
      join, [](const auto& all) { return all.size() == 4; }, kSeen);
  INFO(describe(joined.last));
  REQUIRE(joined.met);
  std::set<std::string> ranks;
  for (const PromSample& gpu : joined.last) {
    ranks.insert(gpu.label("rank"));
    CHECK(gpu.label("rank") == gpu.label("gpu"));  // rank R has local rank R: the R-th GPU
    CHECK(gpu.value == 90 + std::stoi(gpu.label("gpu")));
  }
  CHECK(ranks == std::set<std::string>{"0", "1", "2", "3"});
}

// After rank 3's crash: one restart, caused by an exit; goodput below 1 with restart 1's loss.
void checkRestart(const PrometheusServer& prometheus) {
  const PromWait restarted = prometheus.waitFor(
      restarts(), [](const auto& all) { return sum(all) == 1; }, kSeen);
  INFO(describe(restarted.last) << prometheus.log());
  REQUIRE(restarted.met);
  CHECK(by(restarted.last, "cause")["exit"] == 1);
  const std::string productive = "pltrun_productive_seconds_total{job=\"" + kRunId + "\"}";
  const std::vector<PromSample> before = prometheus.query(productive);
  REQUIRE(before.size() == 1);
  // Productive again once the resumed ranks pass the step reached before the crash.
  const PromWait resumed = prometheus.waitFor(
      productive, [&](const auto& now) { return now.size() == 1 && now[0].value > before[0].value + 1; }, kSeen);
  INFO(describe(resumed.last));
  CHECK(resumed.met);
  const std::vector<PromSample> ratio = prometheus.query("pltrun_goodput_ratio{job=\"" + kRunId + "\"}");
  const std::vector<PromSample> lost = prometheus.query("pltrun_restart_lost_seconds{job=\"" + kRunId + "\"}");
  const std::vector<PromSample> lostTotal = prometheus.query("pltrun_lost_seconds_total{job=\"" + kRunId + "\"}");
  INFO(describe(ratio) << describe(lost) << describe(lostTotal));
  REQUIRE(ratio.size() == 1);
  CHECK(ratio[0].value > 0);
  CHECK(ratio[0].value < 1);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].label("restart") == "1");
  CHECK(lost[0].value > 0);
  REQUIRE(lostTotal.size() == 1);
  CHECK(lostTotal[0].value == Approx(lost[0].value).margin(0.5));
}

// Rank 2 stops beating: its heartbeat age grows from one query to the next, the others' stay
// below the stuck-rank query's threshold (3 s: a second would measure how busy the machine
// is, not whether they beat), and that query finds rank 2 alone.
void checkStall(const PrometheusServer& prometheus) {
  auto stalledFor = [](double seconds) {
    return [seconds](const std::vector<PromSample>& all) { return all.size() == 4 && by(all, "rank")["2"] > seconds; };
  };
  const PromWait first = prometheus.waitFor(ages(), stalledFor(3), kSeen);
  INFO(describe(first.last));
  REQUIRE(first.met);
  const double earlier = by(first.last, "rank")["2"];
  const PromWait later = prometheus.waitFor(ages(), stalledFor(earlier + 2), kSeen);
  INFO(describe(later.last));
  REQUIRE(later.met);
  for (const std::string rank : {"0", "1", "3"}) CHECK(by(later.last, "rank")[rank] < 3);
  const std::vector<PromSample> stuck = prometheus.query(ages() + " > 3");
  INFO(describe(stuck));
  REQUIRE(stuck.size() == 1);
  CHECK(stuck[0].label("rank") == "2");
}

}  // namespace

TEST_CASE(
    "metrics: Prometheus scraping a live 4-worker job sees restarts go 0 to 1 after a crash, goodput below 1, "
    "a stalled rank's heartbeat age grow, GPUs joined to ranks, and promtool accepts the exposition",
    "[prometheus][metrics]") {
  PrometheusServer prometheus;
  StaticHttpServer dcgm(dcgmExposition());
  MetricsJob job(kRunId, {"--max-restarts", "1"});
  const int port = job.metricsPort();
  INFO(job.process->stderrSoFar());
  REQUIRE(port > 0);
  prometheus.scrape({{"pltrun", {"127.0.0.1:" + std::to_string(port)}}, {"dcgm", {dcgm.address()}}});

  checkFirstAttempt(prometheus);
  job.tell("crash");
  checkRestart(prometheus);
  job.tell("stall");
  checkStall(prometheus);

  const HttpAnswer exposition = httpGet(port, "/metrics");
  REQUIRE(exposition.status == 200);
  const Finished promtool = promtoolCheckMetrics(exposition.body);
  INFO(exposition.body << promtool.out << promtool.err);
  CHECK(promtool.status == 0);
  // Exactly the families docs/METRICS.md lists, each with its # HELP.
  const std::string expected =
      "pltrun_goodput_ratio\npltrun_job_elapsed_seconds\npltrun_lost_seconds_total\n"
      "pltrun_productive_seconds_total\npltrun_rank_heartbeat_age_seconds\npltrun_rank_info\n"
      "pltrun_rank_progress\npltrun_rank_step_seconds\npltrun_rendezvous_rounds_total\n"
      "pltrun_rendezvous_seconds_total\npltrun_restart_lost_seconds\npltrun_restarts_total\n"
      "pltrun_stalls_detected_total\npltrun_workers\n";
  CHECK(familiesOf(exposition.body) == expected);

  const std::vector<std::string> queries = readmeQueries();
  REQUIRE(queries.size() == 3);
  for (const std::string& query : queries) {
    INFO(query);
    CHECK_NOTHROW(prometheus.query(query));
  }
  // The README's order: a stuck rank, restarts per hour by cause, the DCGM join.
  CHECK(by(prometheus.query(queries[1]), "cause")["exit"] > 0.5);  // increase() extrapolates 1 a little
  const std::vector<PromSample> gpus = prometheus.query(queries[2]);
  INFO(describe(gpus));
  CHECK(gpus.size() == 4);
  for (const PromSample& gpu : gpus) CHECK_FALSE(gpu.label("rank").empty());

  const Finished end = job.finish();
  INFO(end.err);
  CHECK(end.status == 0);
}
