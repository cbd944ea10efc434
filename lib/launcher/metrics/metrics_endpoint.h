#pragma once
// `--metrics ADDR:PORT` as both modes start it: the server of a recorder's scrapes, started
// before the first attempt or round, and the console line that says where it listens.

#include <memory>
#include <optional>

#include "base/endpoint.h"
#include "launcher/metrics/metrics_recorder.h"
#include "launcher/metrics/metrics_server.h"

namespace pltrun {

/// With `endpoint`: a MetricsServer whose body is `recorder`'s scrape at the time of each
/// request, announced as "metrics at http://ADDR:PORT/metrics"; none without (no thread, no
/// socket). Throws Error(InvalidArgument), one line naming the address, when it cannot
/// bind: pltrun then exits with status 2 before any worker starts. `recorder` must outlive
/// the server.
std::unique_ptr<MetricsServer> serveMetrics(const std::optional<Endpoint>& endpoint, const MetricsRecorder& recorder);

}  // namespace pltrun
