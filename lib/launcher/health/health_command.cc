#include "launcher/health/health_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>

#include "base/terminal_text.h"
#include "launcher/command_line/process_inputs.h"
#include "launcher/command_line/site_config.h"
#include "launcher/health/job_health.h"
#include "launcher/health/node_health.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr int kHealthy = 0;
constexpr int kUnhealthy = 1;
constexpr int kUsageError = 2;

struct HealthFlags {
  std::string command, timeout, interval;
  int expectedGpus = -1;  ///< -1: any
  bool json = false;
  bool help = false;
};

HealthFlags parseHealthFlags(int argc, const char* const* argv) {
  HealthFlags flags;
  CLI::App app{"pltrun health: this node's health checks (NVML's GPU checks and --health-check), alone",
               "pltrun health"};
  app.add_option("--health-check,--health_check", flags.command,
                 "a command (run by /bin/sh -c): exit 0 healthy (default: the site config's)");
  app.add_option("--health-check-timeout,--health_check_timeout", flags.timeout,
                 "seconds it may run before it is killed and fails (default 60, or the site config's)");
  app.add_option("--health-check-interval,--health_check_interval", flags.interval,
                 "accepted, as a job's flags are passed along; one check runs here");
  app.add_option("--expected-gpus,--expected_gpus", flags.expectedGpus, "fail when fewer GPUs than N are seen")
      ->check(CLI::Range(0, 1 << 20));
  app.add_flag("--json", flags.json, "the verdicts as one line of JSON (docs/USAGE.md, pltrun health)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    flags.help = true;
  } catch (const CLI::ParseError& error) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(error.what()) + " (usage: pltrun health [--health-check CMD] [--json])");
  }
  return flags;
}

// The flags, else the site config's keys, as a job reads them.
HealthCheckOptions optionsFor(const HealthFlags& flags, const Environment& env) {
  const auto site = [&env](const char* key) {
    return siteConfigValue(key, env, readOwnFileFromDisk, fileExistsOnDisk).value_or("");
  };
  HealthCheckOptions options;
  options.command = !flags.command.empty() ? flags.command : site("health-check");
  const std::string timeout = !flags.timeout.empty() ? flags.timeout : site("health-check-timeout");
  if (!timeout.empty()) options.timeout = parseSecondsFlag("--health-check-timeout", timeout);
  if (options.timeout.count() <= 0) throwInvalidFlag("--health-check-timeout", timeout, "expected seconds above 0");
  if (!flags.interval.empty()) parseSecondsFlag("--health-check-interval", flags.interval);  // checked, unused
  if (flags.expectedGpus >= 0) options.expectedGpus = flags.expectedGpus;
  return options;
}

int reportHealth(int argc, const char* const* argv, const Environment& env) {
  const HealthFlags flags = parseHealthFlags(argc - 1, argv + 1);
  if (flags.help) return kHealthy;
  const NodeHealth health = checkNodeHealth(optionsFor(flags, env), env);
  if (flags.json) {
    std::printf("%s\n", health.toJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    for (const HealthCheckResult& check : health.checks)
      std::printf("%s\n", terminalSafeLine(checkLine(check)).c_str());
    std::printf("%s\n", health.healthy() ? "healthy" : ("unhealthy: " + terminalSafeLine(health.reason())).c_str());
  }
  return health.healthy() ? kHealthy : kUnhealthy;
}

}  // namespace

bool isHealthCommand(int argc, const char* const* argv) { return argc > 1 && std::strcmp(argv[1], "health") == 0; }

int runHealthCommand(int argc, const char* const* argv, const Environment& env) {
  try {
    return reportHealth(argc, argv, env);
  } catch (const Error& error) {
    std::fprintf(stderr, "pltrun health: error: %s\n", terminalSafeLine(error.what()).c_str());
    return kUsageError;
  }
}

}  // namespace pltrun
