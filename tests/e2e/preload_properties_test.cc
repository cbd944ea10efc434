// Issue 43, item 2: a worker forked from pltrun's zygote (--preload) is indistinguishable
// from a cold-started one. tests/e2e/worker_properties.py reports what each worker sees of
// itself (environment through os.environ and C getenv, argv, __main__, cwd, umask, stdio,
// descriptors, signal dispositions and mask, process group, session, parent-death signal,
// cgroup, CPUs, rlimits, faulthandler and pltrun's stack hook, PYTHONHASHSEED, threads,
// multiprocessing with fork, spawn and forkserver); each test runs it cold and forked and
// fails once per property that differs. Plain Python (no torch): `--preload json`.

#include <catch2/catch.hpp>

#include "e2e/property_probe.h"
#include "helpers/fake_sysfs.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;
using nlohmann::json;

namespace {

const std::vector<std::string> kPreload = {"--preload", "json"};

// Cold and forked, each checked on its own, then against each other.
void compareColdAndForked(ProgramForm form) {
  TempDir dir;
  const std::vector<std::string> probeFlags = {"--multiprocessing"};
  ProbeRun cold = runProbe({}, form, dir, "cold", {}, probeFlags);
  ProbeRun forked = runProbe(kPreload, form, dir, "forked", {}, probeFlags);
  INFO("cold:\n"
       << cold.finished.out << cold.finished.err << "forked:\n"
       << forked.finished.out << forked.finished.err);
  REQUIRE(cold.finished.status == 0);
  REQUIRE(forked.finished.status == 0);
  for (int rank = 0; rank < 2; ++rank) {
    checkEveryWorker(cold, rank, true);
    checkEveryWorker(forked, rank, true);
    // The forked worker found json imported before its first line ran: the zygote's.
    CHECK(cold.raw[rank]["interpreter"]["preloaded_at_start"] == json::array());
    CHECK(forked.raw[rank]["interpreter"]["preloaded_at_start"] == json::array({"json"}));
  }
  for (const ProbeRun* run : {&cold, &forked}) {
    checkOutputLines(*run);
    checkRanksDiffer(*run, "/interpreter/random");
  }
  checkLikeCold(cold, forked);
}

}  // namespace

TEST_CASE("preload: a forked script worker sees what a cold one sees", "[preload]") {
  compareColdAndForked(ProgramForm::Script);
}

TEST_CASE("preload: a forked -m module worker sees what a cold one sees", "[preload]") {
  compareColdAndForked(ProgramForm::Module);
}

TEST_CASE("preload: a forked --run-path worker sees what a cold one sees", "[preload]") {
  compareColdAndForked(ProgramForm::RunPath);
}

TEST_CASE("preload: with PYTHONHASHSEED set a forked worker hashes as a fresh python3 with that seed", "[preload]") {
  ChildProcess fresh({"/bin/sh", "-c", "exec python3 -c 'print(hash(\"pltrun\"))'"}, {"PYTHONHASHSEED=4321"});
  const Finished expected = fresh.wait(std::chrono::seconds(30));
  REQUIRE(expected.status == 0);
  TempDir dir;
  ProbeRun cold = runProbe({}, ProgramForm::Script, dir, "cold", {"PYTHONHASHSEED=4321"});
  ProbeRun forked = runProbe(kPreload, ProgramForm::Script, dir, "forked", {"PYTHONHASHSEED=4321"});
  INFO(cold.finished.err << forked.finished.err);
  REQUIRE(forked.finished.status == 0);
  for (const ProbeRun* run : {&cold, &forked}) {
    for (const json& report : run->raw) {
      CHECK(std::to_string(report["interpreter"]["hash_pltrun"].get<long long>()) + "\n" == expected.out);
      CHECK(report["interpreter"]["flags"]["hash_randomization"] == 1);
    }
  }
  REQUIRE(forked.raw[0]["interpreter"]["preloaded_at_start"] == json::array({"json"}));
  checkLikeCold(cold, forked);
}

TEST_CASE("preload: a forked worker keeps the umask, cwd and rlimits pltrun was given", "[preload]") {
  // Values no default has: umask 027, a small open-file limit, the test's scratch directory.
  TempDir dir;
  const auto underShell = [&](const std::vector<std::string>& flags, const std::string& name) {
    std::string command = "umask 027 && ulimit -n 777 && cd '" + dir.path() + "' && exec";
    for (const std::string& arg : pltrunCommand({"--nproc-per-node", "2", "--rdzv-id", "probe"}))
      command += " '" + arg + "'";
    for (const std::string& arg : flags) command += " '" + arg + "'";
    const std::string out = dir / name;
    std::filesystem::create_directories(out);
    ChildProcess shell({"/bin/sh", "-c", command + " '" + probeScript() + "' '" + out + "'"});
    const Finished finished = shell.wait(std::chrono::seconds(120));
    INFO(finished.err);
    CHECK(finished.status == 0);
    return workerReport(out, 1);
  };
  const json cold = underShell({}, "cold");
  const json forked = underShell(kPreload, "forked");
  REQUIRE(forked["interpreter"]["preloaded_at_start"] == json::array({"json"}));
  for (const json& report : {cold, forked}) {
    CHECK(report["process"]["umask"] == 027);
    CHECK(report["process"]["cwd"] == dir.path());
    CHECK(report["process"]["rlimits"]["RLIMIT_NOFILE"][0] == 777);
  }
}

TEST_CASE("preload: with --numa-binding a forked worker runs on its GPU's CPUs, as a cold one", "[preload][numa]") {
  // The fake sysfs of helpers/fake_sysfs.h: GPU 0 near CPU 0, GPU 1 near CPU 1.
  TempDir dir;
  writeTwoNodeSysfs(dir / "sys", "0000:01:00.0", "0000:81:00.0");
  const std::vector<std::string> env = {"PLTRUN_FAKE_GPUS=2", "PLTRUN_FAKE_GPU_PCI=0000:01:00.0,0000:81:00.0",
                                        "PLTRUN_SYSFS_ROOT=" + (dir / "sys")};
  const std::vector<std::string> binding = {"--numa-binding", "node"};
  std::vector<std::string> forkedFlags = binding;
  forkedFlags.insert(forkedFlags.end(), kPreload.begin(), kPreload.end());
  ProbeRun cold = runProbe(binding, ProgramForm::Script, dir, "cold", env);
  ProbeRun forked = runProbe(forkedFlags, ProgramForm::Script, dir, "forked", env);
  INFO(cold.finished.err << forked.finished.err);
  REQUIRE(forked.finished.status == 0);
  REQUIRE(forked.raw[1]["interpreter"]["preloaded_at_start"] == json::array({"json"}));
  for (const ProbeRun* run : {&cold, &forked}) {
    CHECK(run->raw[0]["process"]["affinity"] == json::array({0}));
    CHECK(run->raw[1]["process"]["affinity"] == json::array({1}));
  }
  checkLikeCold(cold, forked);
}

TEST_CASE("preload: with --redirects 3 a forked worker writes to its own log files, as a cold one",
          "[preload][output]") {
  // The log directory is each run's out directory, so that paths in the reports compare.
  TempDir dir;
  const auto redirected = [&](std::vector<std::string> flags, const std::string& name) {
    flags.insert(flags.end(), {"--redirects", "3", "--log-dir", dir / name});
    return runProbe(flags, ProgramForm::Script, dir, name, {});
  };
  ProbeRun cold = redirected({}, "cold");
  ProbeRun forked = redirected(kPreload, "forked");
  INFO(cold.finished.err << forked.finished.err);
  REQUIRE(forked.finished.status == 0);
  REQUIRE(forked.raw[1]["interpreter"]["preloaded_at_start"] == json::array({"json"}));
  for (const std::string name : {"cold", "forked"}) {
    for (int rank = 0; rank < 2; ++rank) {
      const std::string logs = dir / (name + "/probe/attempt_0/" + std::to_string(rank));
      const std::string line = "properties on stdout from rank " + std::to_string(rank) + "\n";
      CHECK(readFile(logs + "/stdout.log") == line);
      CHECK(readFile(logs + "/stderr.log") == "properties on stderr from rank " + std::to_string(rank) + "\n");
    }
  }
  checkLikeCold(cold, forked);
}
