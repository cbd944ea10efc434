#include "e2e/prometheus_server.h"

#include <signal.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/listening_ports.h"
#include "e2e/loopback_http.h"

namespace pltrun::test {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::vector<PromSample> samplesOf(const nlohmann::json& data) {
  std::vector<PromSample> samples;
  if (data.at("resultType") == "scalar") {
    samples.push_back({{}, std::stod(data.at("result").at(1).get<std::string>())});
    return samples;
  }
  for (const nlohmann::json& series : data.at("result")) {
    PromSample sample;
    for (const auto& [name, value] : series.at("metric").items()) sample.labels[name] = value.get<std::string>();
    sample.value = std::stod(series.at("value").at(1).get<std::string>());
    samples.push_back(std::move(sample));
  }
  return samples;
}

}  // namespace

std::string PromSample::label(const std::string& name) const {
  const auto found = labels.find(name);
  return found == labels.end() ? "" : found->second;
}

PrometheusServer::PrometheusServer() {
  dir_.write("prometheus.yml", configText({}));
  process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
      PROMETHEUS_BINARY, "--config.file=" + (dir_ / "prometheus.yml"), "--storage.tsdb.path=" + (dir_ / "data"),
      "--web.listen-address=127.0.0.1:0", "--log.level=info"});
  waitUntilReady();
}

PrometheusServer::~PrometheusServer() {
  process_->signal(SIGTERM);
  process_->wait(10s);  // SIGKILL when it has not ended by then
}

void PrometheusServer::waitUntilReady() {
  const auto deadline = Clock::now() + 30s;
  std::string last = "it listens on no port";
  while (Clock::now() < deadline) {
    if (processGone(process_->pid())) {
      throw std::runtime_error(std::string(PROMETHEUS_BINARY) +
                               " ended at start-up (scripts/install-deps.sh installs Debian's prometheus); its log:\n" +
                               log());
    }
    const std::vector<int> ports = listeningPorts(process_->pid());
    if (ports.size() == 1) {
      port_ = ports.front();
      try {
        const HttpAnswer ready = httpGet(port_, "/-/ready", 2s);
        if (ready.status == 200) return;
        last = "/-/ready answered " + std::to_string(ready.status);
      } catch (const std::exception& error) {
        last = error.what();
      }
    }
    std::this_thread::sleep_for(50ms);
  }
  throw std::runtime_error("prometheus was not ready within 30 s (" + last + "); its log:\n" + log());
}

std::string PrometheusServer::address() const { return "127.0.0.1:" + std::to_string(port_); }

std::string PrometheusServer::configText(const std::vector<ScrapeJob>& jobs) const {
  std::string text = "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:";
  if (jobs.empty()) return text + " []\n";
  for (const ScrapeJob& job : jobs) {
    text += "\n  - job_name: " + job.name + "\n    honor_labels: true\n    static_configs:\n      - targets: [";
    for (size_t index = 0; index < job.targets.size(); ++index)
      text += (index ? ", '" : "'") + job.targets[index] + "'";
    text += "]";
  }
  return text + "\n";
}

void PrometheusServer::scrape(const std::vector<ScrapeJob>& jobs) {
  const std::string wanted = configText(jobs);
  dir_.write("prometheus.yml", wanted);
  process_->signal(SIGHUP);
  // Reloaded once the config it serves names every job and target.
  const auto deadline = Clock::now() + 10s;
  while (Clock::now() < deadline) {
    const HttpAnswer answer = httpGet(port_, "/api/v1/status/config");
    const std::string loaded = nlohmann::json::parse(answer.body).at("data").at("yaml").get<std::string>();
    bool all = true;
    for (const ScrapeJob& job : jobs) {
      all = all && loaded.find("job_name: " + job.name) != std::string::npos;
      for (const std::string& target : job.targets) all = all && loaded.find(target) != std::string::npos;
    }
    if (all) return;
    std::this_thread::sleep_for(50ms);
  }
  throw std::runtime_error("prometheus did not load its new config within 10 s:\n" + wanted + "its log:\n" + log());
}

std::vector<PromSample> PrometheusServer::query(const std::string& promql) const {
  const HttpAnswer answer = httpGet(port_, "/api/v1/query?query=" + urlEncoded(promql));
  nlohmann::json reply;
  try {
    reply = nlohmann::json::parse(answer.body);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("prometheus answered " + std::to_string(answer.status) + " to " + promql + ": " +
                             answer.body.substr(0, 300));
  }
  if (reply.value("status", "") != "success") {
    throw PromQueryError(promql + ": " + reply.value("errorType", "") + ": " + reply.value("error", ""));
  }
  return samplesOf(reply.at("data"));
}

PromWait PrometheusServer::waitFor(const std::string& promql,
                                   const std::function<bool(const std::vector<PromSample>&)>& met,
                                   std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  PromWait wait;
  while (true) {
    wait.last = query(promql);
    wait.met = met(wait.last);
    if (wait.met || Clock::now() >= deadline) return wait;
    std::this_thread::sleep_for(250ms);
  }
}

std::string PrometheusServer::log() const { return process_ ? process_->stderrSoFar() : ""; }

Finished promtoolCheckMetrics(const std::string& exposition) {
  TempDir dir("pltrun-promtool");
  const std::string input = dir.write("exposition.txt", exposition);
  ChildProcess promtool({"/bin/sh", "-c", "exec \"$0\" check metrics < \"$1\"", PROMTOOL_BINARY, input});
  return promtool.wait(30s);
}

}  // namespace pltrun::test
