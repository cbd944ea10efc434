#pragma once
// Runs tests/e2e/worker_properties.py under the real pltrun, cold or forked from the zygote
// (--preload), as a script, a module (-m) or through --run-path, and checks what every
// worker must see whichever way it started; preload_properties_test.cc and
// preload_torch_test.cc compare the two ways property by property.

#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "e2e/worker_report.h"
#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

namespace pltrun::test {

enum class ProgramForm { Script, Module, RunPath };

struct ProbeRun {
  Finished finished;
  pid_t pltrun = -1;
  std::vector<nlohmann::json> reports;  ///< per rank, with the run's own names replaced
  std::vector<nlohmann::json> raw;      ///< per rank, as written
};

inline const std::string& probeScript() {
  static const std::string path = std::string(TESTS_SOURCE_DIR) + "/e2e/worker_properties.py";
  return path;
}

/// pltrun's arguments that run the probe in `form` (its report into `out`); `scratch` holds
/// the --run-path link, a name without ".py".
inline std::vector<std::string> probeProgram(ProgramForm form, const std::string& scratch, const std::string& out,
                                             const std::vector<std::string>& probeFlags) {
  std::vector<std::string> args;
  if (form == ProgramForm::Script) args = {probeScript()};
  if (form == ProgramForm::Module) args = {"-m", "worker_properties"};
  if (form == ProgramForm::RunPath) {
    const std::string link = scratch + "/worker_properties_link";
    if (!std::filesystem::exists(link)) std::filesystem::create_symlink(probeScript(), link);
    args = {"--run-path", link};
  }
  args.push_back(out);
  args.insert(args.end(), probeFlags.begin(), probeFlags.end());
  return args;
}

/// One pltrun run of `workers` probes; `flags` go before the program (--preload, ...).
/// The module form finds the probe through PYTHONPATH, set for cold and forked runs alike.
inline ProbeRun runProbe(const std::vector<std::string>& flags, ProgramForm form, const TempDir& dir,
                         const std::string& name, std::vector<std::string> env,
                         const std::vector<std::string>& probeFlags = {}, int workers = 2) {
  const std::string out = dir / name;
  std::filesystem::create_directories(out);
  std::vector<std::string> args = {
      "--nproc-per-node", std::to_string(workers), "--stall-timeout", "60", "--rdzv-id", "probe"};
  args.insert(args.end(), flags.begin(), flags.end());
  const std::vector<std::string> program = probeProgram(form, dir.path(), out, probeFlags);
  args.insert(args.end(), program.begin(), program.end());
  env.push_back("PYTHONPATH=" + std::string(TESTS_SOURCE_DIR) + "/e2e");
  ChildProcess pltrun(pltrunCommand(args), env);
  ProbeRun run;
  run.pltrun = pltrun.pid();
  run.finished = pltrun.wait(std::chrono::seconds(150));
  for (int rank = 0; rank < workers; ++rank) {
    run.raw.push_back(workerReport(out, rank));
    run.reports.push_back(withoutRunNames(run.raw.back(), out, run.pltrun));
  }
  return run;
}

/// Properties that differ from process to process by nature or by a documented rule, each
/// checked by its own rule (checkEveryWorker, checkRanksDiffer, checkForkedRules) instead of
/// against the cold worker's value.
inline const std::set<std::string>& perProcessProperties() {
  static const std::set<std::string> paths = {
      "/process/pid",
      "/process/ppid",
      "/process/sid",
      "/interpreter/hash_pltrun",
      "/interpreter/random",
      "/interpreter/numpy_random",
      "/environ/MASTER_PORT",             // a free port per run
      "/interpreter/preloaded_at_start",  // what tells a forked worker from a cold one
      "/proc_environ_is_environ",         // forked: the zygote's (checkForkedRules)
      "/proc_environ_has_rank"};
  return paths;
}

/// What a worker inherits from the process that started it. The torch 2.x chroots start a
/// cold worker through a wrapper (tests/torch2/python3-SUITE: bash, unshare, chroot), which
/// is its parent, changes its cwd, process group and signal dispositions and holds
/// descriptors; a worker forked inside the chroot by the zygote has none of that between it
/// and pltrun. Compared only where the interpreter is pltrun's own child.
inline const std::set<std::string>& startedByWrapper() {
  static const std::set<std::string> paths = {"/process", "/descriptors", "/signals", "/proc_environ_is_environ",
                                              "/interpreter/orig_argv/0"};
  return paths;
}

/// What every probe must have seen, cold or forked. `direct`: pltrun started the
/// interpreter itself, through no wrapper (see startedByWrapper).
inline void checkEveryWorker(const ProbeRun& run, int rank, bool multiprocessing, bool direct = true) {
  const nlohmann::json& report = run.raw.at(rank);
  INFO("rank " << rank << " of pltrun " << run.pltrun << ": " << report.dump(1));
  REQUIRE(report.is_object());
  CHECK(report["main_guard_ran"] == true);
  CHECK(report["interpreter"]["main"]["__name__"] == "__main__");
  CHECK(report["environ"]["RANK"] == std::to_string(rank));
  CHECK(report["environ_disagreements"] == nlohmann::json::array());  // os.environ and C getenv agree
  CHECK(report["threads_at_start"] == 1);
  CHECK(report["stdio"]["0"]["rdev"] == nlohmann::json::array({1, 3}));  // stdin is /dev/null
  CHECK(report["interpreter"]["hook"]["stack_file_is_mine"] == true);    // stall reports get its stack
  CHECK(report["environ"]["MASTER_PORT"].get<std::string>() != "0");
  if (direct) {
    CHECK(report["process"]["ppid"] == run.pltrun);  // a direct child of pltrun, which waits for it
    CHECK(report["process"]["pgid_is_pid"] == true);
    CHECK(report["process"]["parent_death_signal"] == SIGKILL);
    CHECK(report["process"]["cgroup_relation"] != "other");
  }
  if (multiprocessing) {
    CHECK(report["multiprocessing"] == nlohmann::json({{"fork", 49}, {"spawn", 49}, {"forkserver", 49}}));
  }
}

/// Values drawn at random per process must differ between the ranks of one run (a zygote
/// that handed its own to every fork would make them equal).
inline void checkRanksDiffer(const ProbeRun& run, const std::string& path) {
  const nlohmann::json::json_pointer pointer(path);
  const nlohmann::json first = run.raw.at(0).at(pointer);
  const nlohmann::json second = run.raw.at(1).at(pointer);
  INFO(path << ": rank 0 " << first << ", rank 1 " << second);
  if (first.is_null() && second.is_null()) return;  // numpy not importable there
  CHECK(first != second);
}

/// The documented differences of a forked worker (docs/USAGE.md "Fast starts and restarts"):
/// /proc/PID/environ is the zygote's start environment (the kernel's copy; no RANK there)
/// while os.environ is the worker's; with PYTHONHASHSEED unset every forked worker of a node
/// hashes str and bytes with the zygote's secret, where cold workers draw one each.
inline void checkForkedRules(const ProbeRun& cold, const ProbeRun& forked) {
  for (int rank = 0; rank < 2; ++rank) {
    CHECK(cold.raw.at(rank)["proc_environ_has_rank"] == true);  // pltrun exec'd it with RANK
    CHECK(forked.raw.at(rank)["proc_environ_has_rank"] == false);
    CHECK(forked.raw.at(rank)["environ"]["RANK"] == std::to_string(rank));
  }
  if (forked.raw.at(0)["interpreter"]["hash_seed_env"].is_null()) {
    CHECK(forked.raw.at(0)["interpreter"]["hash_pltrun"] == forked.raw.at(1)["interpreter"]["hash_pltrun"]);
    checkRanksDiffer(cold, "/interpreter/hash_pltrun");
  }
}

/// Every worker of `run` printed its stdout and stderr lines through pltrun's prefixes.
inline void checkOutputLines(const ProbeRun& run, int workers = 2) {
  for (int rank = 0; rank < workers; ++rank) {
    const std::string tag = "[rank " + std::to_string(rank) + "] properties on ";
    CHECK_THAT(run.finished.out, Catch::Contains(tag + "stdout from rank " + std::to_string(rank) + "\n"));
    CHECK_THAT(run.finished.err, Catch::Contains(tag + "stderr from rank " + std::to_string(rank) + "\n"));
  }
}

/// The forked run's reports against the cold run's: every difference is one failed check;
/// the documented differences are checked as their rules say.
inline void checkLikeCold(const ProbeRun& cold, const ProbeRun& forked, bool direct = true, int workers = 2) {
  checkForkedRules(cold, forked);
  std::set<std::string> ignored = perProcessProperties();
  if (!direct) ignored.insert(startedByWrapper().begin(), startedByWrapper().end());
  for (int rank = 0; rank < workers; ++rank) {
    for (const std::string& difference : reportDifferences(cold.reports.at(rank), forked.reports.at(rank), ignored)) {
      FAIL_CHECK("rank " << rank << ": " << difference);
    }
  }
}

}  // namespace pltrun::test
