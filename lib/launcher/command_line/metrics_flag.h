#pragma once
// --metrics ADDR:PORT (issue 47): where this launcher serves Prometheus's scrapes
// (metrics/metrics_server.h). Pure; errors are Error(InvalidArgument), one line naming the flag.

#include <string>

#include "base/endpoint.h"

namespace pltrun {

/// "ADDR:PORT", "[IPv6]:PORT", or "PORT" / ":PORT" alone for 127.0.0.1 (loopback unless an
/// address is given); PORT 0..65535, 0 letting the kernel pick one. The port is required.
Endpoint parseMetricsEndpoint(const std::string& flag, const std::string& text);

}  // namespace pltrun
