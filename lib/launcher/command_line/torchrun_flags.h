#pragma once
// The flags and variables of torchrun 2.x (up to 2.14) that have no older pltrun spelling:
// each either takes its torchrun meaning here or is refused with one line saying why
// (docs/USAGE.md "Options", the torchrun 2.14 table).

#include <string>
#include <vector>

#include "launcher/command_line/raw_flags.h"
#include "launcher/plan/launch_config.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// --logs-specs, --event-log-handler, --signals-to-handle: refused with the reason, or
/// accepted where pltrun does the same anyway.
void checkTorchrunOnlyFlags(const RawFlags& raw);

/// --shutdown-timeout (torchrun 2.14's name for --term-timeout; TORCH_ELASTIC_SHUTDOWN_TIMEOUT
/// when neither flag is given), --virtual-local-rank, --log-line-prefix-template (wins over
/// TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE), --duplicate-stdout-filters and
/// --duplicate-stderr-filters, --numa-binding.
void applyTorchrun214Flags(const RawFlags& raw, const Environment& env, LaunchConfig& config);

/// torchrun's comma-separated filter list: ",," stands for a comma inside a filter; an
/// empty list (or empty filters) duplicates nothing.
std::vector<std::string> parseDuplicateFilters(const std::string& text);

/// TORCHELASTIC_HEALTH_CHECK_PORT: the one line to log when it is set (open-source
/// torchrun's health-check server is a stub that serves nothing, and so is this), or "".
std::string healthCheckPortNotice(const Environment& env);

}  // namespace pltrun
