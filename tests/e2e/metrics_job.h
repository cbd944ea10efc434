#pragma once
// A live 4-worker pltrun job with --metrics, for the metrics tests: workers that beat their
// steps (e2e/checkpoint_workers.py, steered by files in the job's directory) on four fake GPUs
// with UUIDs, and the port the launcher printed (metrics_scrape.h's metricsPort).

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "e2e/metrics_scrape.h"
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

  /// The port the launcher printed ("metrics at http://127.0.0.1:PORT/metrics"); 0 when it
  /// printed none within `timeout` or ended first.
  int metricsPort(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const {
    return pltrun::test::metricsPort(*process, timeout);
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
