#pragma once
// `--metrics ADDR:PORT` as both modes start it: the labels every metric carries, the server
// of a recorder's scrapes, started before the first attempt or round, and the console line
// that says where it listens.

#include <memory>
#include <optional>
#include <string>

#include "base/endpoint.h"
#include "launcher/metrics/metrics_recorder.h"
#include "launcher/metrics/metrics_server.h"

namespace pltrun {

struct ResolvedJob;

/// The labels of every metric of a launcher on `host`: the run id, and the node as blame
/// and `pltrun status` name it (node_name= of --rdzv-conf, else `host`).
MetricsIdentity metricsIdentity(const ResolvedJob& job, const std::string& host);

/// With `endpoint`: a MetricsServer whose body is `recorder`'s scrape at the time of each
/// request, announced as "metrics at http://ADDR:PORT/metrics"; none without (no thread, no
/// socket). None too, after one warning line naming the address and why, when it cannot
/// bind: the job runs without metrics. Metrics watch a job and must never stop it; a port
/// taken by another job, or by another local user who took it first on purpose, would
/// otherwise keep every job that names it from starting. `recorder` must outlive the server.
std::unique_ptr<MetricsServer> serveMetrics(const std::optional<Endpoint>& endpoint, const MetricsRecorder& recorder);

}  // namespace pltrun
