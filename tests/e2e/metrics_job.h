#pragma once
// A live 4-worker pltrun job with --metrics, for the metrics tests: workers that beat their
// steps (e2e/checkpoint_workers.py, steered by files in the job's directory) on four fake GPUs
// with UUIDs, and the port the launcher printed ("metrics at http://127.0.0.1:PORT/metrics").

#include <chrono>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

/// The fake GPUs' UUIDs, GPU index I the I-th: what a DCGM stand-in labels its series with.
inline std::vector<std::string> metricsJobGpuUuids() {
  return {"GPU-6a1b0c00-0000-4000-8000-000000000000", "GPU-6a1b0c00-0000-4000-8000-000000000001",
          "GPU-6a1b0c00-0000-4000-8000-000000000002", "GPU-6a1b0c00-0000-4000-8000-000000000003"};
}

class MetricsJob {
 public:
  /// Starts `pltrun --nproc-per-node gpu --metrics 127.0.0.1:0 --rdzv-id RUN_ID FLAGS...
  /// checkpoint_workers.py DIR` on 4 fake GPUs.
  MetricsJob(const std::string& runId, const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"--nproc-per-node", "gpu", "--metrics", "127.0.0.1:0", "--rdzv-id", runId};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(),
                {"--no-python", "/usr/bin/python3", TESTS_SOURCE_DIR "/e2e/checkpoint_workers.py", dir.path()});
    std::string uuids;
    for (const std::string& uuid : metricsJobGpuUuids()) uuids += (uuids.empty() ? "" : ",") + uuid;
    process = std::make_unique<ChildProcess>(pltrunCommand(args), std::vector<std::string>{
                                                                      "PLTRUN_FAKE_GPUS=4",
                                                                      "PLTRUN_FAKE_GPU_UUIDS=" + uuids,
                                                                      "TMPDIR=" + dir.path(),
                                                                  });
  }

  /// The port of "metrics at http://127.0.0.1:PORT/metrics" on the launcher's stderr; 0 when
  /// it printed none within `timeout` or ended first.
  int metricsPort(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const {
    const std::regex line("metrics at http://127\\.0\\.0\\.1:([0-9]+)/metrics");
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch match;
      const std::string err = process->stderrSoFar();
      if (std::regex_search(err, match, line)) return std::stoi(match[1].str());
      if (processGone(process->pid())) return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }

  /// Creates DIR/`name`: "crash", "stall" or "finish" (checkpoint_workers.py).
  void tell(const std::string& name) const { std::ofstream(dir / name) << name; }

  /// Tells the workers to finish and waits for the launcher's end (30 s).
  Finished finish() {
    tell("finish");
    return process->wait(std::chrono::seconds(30));
  }

  TempDir dir{"pltrun-metrics-job"};
  std::unique_ptr<ChildProcess> process;
};

}  // namespace pltrun::test
