#pragma once
// The launcher's own messages ("pltrun: ..." on stderr), kept apart from worker output,
// which never goes through the logger.

namespace pltrun {

/// Installs the default spdlog logger: stderr, "pltrun: " before every message; `quiet`
/// keeps only warnings and errors, `verbose` adds the debugging lines (--verbose).
void configureLauncherLog(bool quiet, bool verbose = false);

}  // namespace pltrun
