// The Prometheus fixture on its own (e2e/prometheus_server.h), before any pltrun job: a real
// Prometheus started on a port of its choosing, scraping itself and a static target, answering
// PromQL through its HTTP API, keeping the targets' own job labels (honor_labels), refusing a
// bad expression, reaped at the end; and promtool telling a good exposition from bad ones.

#include <catch2/catch.hpp>

#include "e2e/listening_ports.h"
#include "e2e/loopback_http.h"
#include "e2e/prometheus_server.h"
#include "e2e/static_http_server.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

bool allUp(const std::vector<PromSample>& up, size_t targets) {
  if (up.size() != targets) return false;
  for (const PromSample& target : up) {
    if (target.value != 1) return false;
  }
  return true;
}

}  // namespace

TEST_CASE(
    "prometheus fixture: a real Prometheus on its own port scrapes itself and a static target, answers PromQL, "
    "keeps the targets' job label and is reaped",
    "[prometheus]") {
  pid_t pid = 0;
  {
    PrometheusServer prometheus;
    pid = prometheus.pid();
    REQUIRE(listeningPorts(pid) == std::vector<int>{prometheus.port()});
    StaticHttpServer target(
        "# HELP fixture_value A value.\n# TYPE fixture_value gauge\n"
        "fixture_value{job=\"from-the-target\",UUID=\"GPU-a\"} 7\n");
    prometheus.scrape({{"itself", {prometheus.address()}}, {"static", {target.address()}}});
    const PromWait up = prometheus.waitFor(
        "up", [](const auto& up) { return allUp(up, 2); }, 30s);
    INFO(prometheus.log());
    REQUIRE(up.met);

    const std::vector<PromSample> own = prometheus.query("prometheus_build_info");
    REQUIRE(own.size() == 1);
    CHECK(own[0].label("job") == "itself");
    CHECK(own[0].label("instance") == prometheus.address());

    const std::vector<PromSample> value = prometheus.query("fixture_value");
    REQUIRE(value.size() == 1);
    CHECK(value[0].value == 7);
    CHECK(value[0].label("job") == "from-the-target");  // honor_labels: not renamed
    CHECK(value[0].label("exported_job").empty());
    CHECK(prometheus.query("scalar(fixture_value) * 2").at(0).value == 14);

    CHECK_THROWS_AS(prometheus.query("sum(fixture_value"), PromQueryError);
  }
  CHECK(processGone(pid));
}

TEST_CASE(
    "prometheus fixture: promtool check metrics accepts Prometheus's own exposition and refuses broken or "
    "misnamed ones",
    "[prometheus]") {
  PrometheusServer prometheus;
  const HttpAnswer own = httpGet(prometheus.port(), "/metrics");
  REQUIRE(own.status == 200);
  const Finished good = promtoolCheckMetrics(own.body);
  INFO(good.out << good.err);
  CHECK(good.status == 0);

  const Finished broken = promtoolCheckMetrics("# TYPE pltrun_x gauge\npltrun_x{rank=\"0\" 1\n");
  CHECK(broken.status != 0);
  const Finished misnamed = promtoolCheckMetrics(
      "# HELP pltrun_restarts Restarts.\n# TYPE pltrun_restarts counter\n"
      "pltrun_restarts 1\n");
  INFO(misnamed.out << misnamed.err);
  CHECK(misnamed.status != 0);
  CHECK(misnamed.out + misnamed.err != "");
}
