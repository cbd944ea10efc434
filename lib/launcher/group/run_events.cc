#include "launcher/group/run_events.h"

#include "version/version.h"

namespace pltrun {

nlohmann::json runStartedFields(const LaunchConfig& config, const std::string& runId, const std::string& directory,
                                const std::string& host, int workers) {
  return {{"run_id", runId},
          {"directory", directory},
          {"host", host},
          {"workers", workers},
          {"max_restarts", config.maxRestarts},
          {"program", config.program},
          {"pltrun_version", buildVersion()}};
}

void recordWorkerEvents(GroupSettings& group, EventLog& events, const nlohmann::json& attemptFields) {
  group.onStall = [&events, attemptFields](const StallReport& report) {
    nlohmann::json fields = report.json();
    fields.update(attemptFields);
    events.write("stall_detected", fields);
  };
  group.onWorkerStarted = [&events, attemptFields](const WorkerSpec& spec, pid_t pid) {
    nlohmann::json fields = {{"rank", spec.rank}, {"local_rank", spec.localRank}, {"pid", pid}};
    fields.update(attemptFields);
    events.write("worker_started", fields);
  };
  group.onWorkerExited = [&events, attemptFields](const WorkerSpec& spec, pid_t pid, const ProcessEnd& end, bool) {
    nlohmann::json fields = {{"rank", spec.rank},
                             {"local_rank", spec.localRank},
                             {"pid", pid},
                             {"status", end.shellStatus()},
                             {"description", end.describe()}};
    if (end.signal != 0) {
      fields["signal"] = end.signal;
    } else {
      fields["exit_code"] = end.exitCode;
    }
    fields.update(attemptFields);
    events.write("worker_exited", fields);
  };
}

}  // namespace pltrun
