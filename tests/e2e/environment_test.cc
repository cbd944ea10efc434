// The environment every worker gets from the real pltrun, for 1..8 workers, with GPUs
// chosen by --devices, on a static multi-node placement, and for Python programs.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"
#include "helpers/worker_env_file.h"

using namespace pltrun::test;
using nlohmann::json;

TEST_CASE("every worker gets torchrun's environment, for 1 to 8 workers", "[env]") {
  for (int workers = 1; workers <= 8; ++workers) {
    TempDir dir;
    Finished run =
        runPltrun({"--nproc-per-node", std::to_string(workers), "--rdzv-id", "job42", testWorker(), "env", dir.path()},
                  {"OMP_NUM_THREADS", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "PLTRUN_TEST_INHERITED=kept"});
    INFO("workers=" << workers << " stderr: " << run.err);
    REQUIRE(run.status == 0);
    std::set<std::string> ports, errorFiles;
    std::set<int> groups;
    for (int rank = 0; rank < workers; ++rank) {
      json env = workerEnvironment(dir, rank);
      CHECK(env["RANK"] == std::to_string(rank));
      CHECK(env["LOCAL_RANK"] == std::to_string(rank));
      CHECK(env["WORLD_SIZE"] == std::to_string(workers));
      CHECK(env["LOCAL_WORLD_SIZE"] == std::to_string(workers));
      CHECK(env["GROUP_RANK"] == "0");
      CHECK(env["NODE_RANK"] == "0");
      CHECK(env["GROUP_WORLD_SIZE"] == "1");
      CHECK(env["ROLE_NAME"] == "default");
      CHECK(env["ROLE_RANK"] == std::to_string(rank));
      CHECK(env["ROLE_WORLD_SIZE"] == std::to_string(workers));
      CHECK(env["MASTER_ADDR"] == "127.0.0.1");
      CHECK(env["TORCHELASTIC_RESTART_COUNT"] == "0");
      CHECK(env["TORCHELASTIC_MAX_RESTARTS"] == "0");
      CHECK(env["TORCHELASTIC_RUN_ID"] == "job42");
      CHECK(env["TORCHELASTIC_USE_AGENT_STORE"] == "True");  // pltrun hosts the workers' store
      CHECK(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
      CHECK(env["PLTRUN_TEST_INHERITED"] == "kept");
      CHECK(env.contains("OMP_NUM_THREADS") == (workers > 1));
      CHECK(!env.contains("CUDA_VISIBLE_DEVICES"));
      // Each worker leads its own process group, so signals reach its whole tree.
      CHECK(env["pid"] == env["pgid"]);
      ports.insert(env["MASTER_PORT"].get<std::string>());
      errorFiles.insert(env["TORCHELASTIC_ERROR_FILE"].get<std::string>());
      groups.insert(env["pgid"].get<int>());
    }
    CHECK(ports.size() == 1);
    int port = std::stoi(*ports.begin());
    CHECK(port > 0);
    CHECK(port < 65536);
    CHECK(errorFiles.size() == static_cast<size_t>(workers));
    CHECK(groups.size() == static_cast<size_t>(workers));
  }
}

TEST_CASE("user-set OMP_NUM_THREADS and TORCH_NCCL_ASYNC_ERROR_HANDLING are kept", "[env]") {
  TempDir dir;
  Finished run = runPltrun({"--nproc-per-node", "2", testWorker(), "env", dir.path()},
                           {"OMP_NUM_THREADS=6", "TORCH_NCCL_ASYNC_ERROR_HANDLING=0"});
  REQUIRE(run.status == 0);
  json env = workerEnvironment(dir, 1);
  CHECK(env["OMP_NUM_THREADS"] == "6");
  CHECK(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "0");
}

TEST_CASE("flag --devices picks the workers and CUDA_VISIBLE_DEVICES", "[env][devices]") {
  SECTION("\"1, 3\" runs two workers on GPUs 1 and 3") {
    TempDir dir;
    Finished run = runPltrun({"--devices", "1, 3", testWorker(), "env", dir.path()},
                             {"PLTRUN_FAKE_GPUS=4", "CUDA_VISIBLE_DEVICES"});
    INFO(run.err);
    REQUIRE(run.status == 0);
    CHECK(workerEnvironment(dir, 0)["CUDA_VISIBLE_DEVICES"] == "1,3");
    CHECK(workerEnvironment(dir, 1)["WORLD_SIZE"] == "2");
    CHECK(!std::filesystem::exists(dir / "env_2.json"));
  }
  SECTION("indices count the GPUs CUDA_VISIBLE_DEVICES already exposes") {
    TempDir dir;
    Finished run = runPltrun({"--devices", "2", testWorker(), "env", dir.path()},
                             {"PLTRUN_FAKE_GPUS=8", "CUDA_VISIBLE_DEVICES=4,5,6,7"});
    REQUIRE(run.status == 0);
    CHECK(workerEnvironment(dir, 0)["CUDA_VISIBLE_DEVICES"] == "4,5");
    CHECK(workerEnvironment(dir, 1)["LOCAL_WORLD_SIZE"] == "2");
  }
  SECTION("-1 takes every visible GPU") {
    TempDir dir;
    Finished run =
        runPltrun({"--devices", "-1", testWorker(), "env", dir.path()}, {"PLTRUN_FAKE_GPUS=3", "CUDA_VISIBLE_DEVICES"});
    REQUIRE(run.status == 0);
    CHECK(workerEnvironment(dir, 2)["CUDA_VISIBLE_DEVICES"] == "0,1,2");
  }
  SECTION("0 hides every GPU from the workers") {
    TempDir dir;
    Finished run =
        runPltrun({"--devices", "0", "--nproc-per-node", "2", testWorker(), "env", dir.path()}, {"PLTRUN_FAKE_GPUS=4"});
    REQUIRE(run.status == 0);
    CHECK(workerEnvironment(dir, 1)["CUDA_VISIBLE_DEVICES"] == "");
  }
  SECTION("asking for GPUs on a machine without any is a clear error") {
    for (auto flags : std::vector<std::vector<std::string>>{{"--devices", "2"}, {"--nproc-per-node", "gpu"}}) {
      flags.push_back("true");
      Finished run = runPltrun(flags, {"PLTRUN_FAKE_GPUS=0"});
      CHECK(run.status == 2);
      CHECK(run.err.find(flags[0]) != std::string::npos);
      CHECK(run.err.find("visible") != std::string::npos);
    }
  }
}

TEST_CASE("a static multi-node placement gives global ranks", "[env]") {
  TempDir dir;
  std::string port = std::to_string(freeLoopbackPort());
  Finished run = runPltrun({"--nnodes", "3", "--node-rank", "1", "--master-addr", "127.0.0.2", "--master-port", port,
                            "--nproc_per_node", "2", "--role", "trainer", testWorker(), "env", dir.path()});
  INFO(run.err);
  REQUIRE(run.status == 0);
  for (int rank : {2, 3}) {
    json env = workerEnvironment(dir, rank);
    CHECK(env["LOCAL_RANK"] == std::to_string(rank - 2));
    CHECK(env["WORLD_SIZE"] == "6");
    CHECK(env["GROUP_RANK"] == "1");
    CHECK(env["NODE_RANK"] == "1");
    CHECK(env["GROUP_WORLD_SIZE"] == "3");
    CHECK(env["ROLE_NAME"] == "trainer");
    CHECK(env["MASTER_ADDR"] == "127.0.0.2");
    CHECK(env["MASTER_PORT"] == port);
    CHECK(env["TORCHELASTIC_USE_AGENT_STORE"] == "False");  // rank 0 hosts it, as torchrun's static launch
  }
}

TEST_CASE("Python scripts and modules run under PYTHON_EXEC", "[env][python]") {
  TempDir dir;
  std::string script = dir / "show_rank.py";
  {
    std::ofstream file(script);
    file << "import os, sys\n"
            "open(os.path.join(sys.argv[1], 'py_' + os.environ['RANK']), 'w').write(sys.argv[2] + ' ' + "
            "os.environ['WORLD_SIZE'])\n";
  }
  Finished run = runPltrun({"--nproc-per-node", "2", script, dir.path(), "hello"}, {"PYTHON_EXEC=/usr/bin/python3"});
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK(readFile(dir / "py_0") == "hello 2");
  CHECK(readFile(dir / "py_1") == "hello 2");

  std::filesystem::create_directories(dir / "pkg");
  std::ofstream(dir / "pkg/rank_module.py") << "import os, sys\nopen(os.path.join(sys.argv[1], 'mod_' + "
                                               "os.environ['RANK']), 'w').write('module')\n";
  Finished module = runPltrun({"--nproc-per-node", "2", "-m", "rank_module", dir.path()},
                              {"PYTHON_EXEC=/usr/bin/python3", "PYTHONPATH=" + (dir / "pkg")});
  INFO(module.err);
  REQUIRE(module.status == 0);
  CHECK(readFile(dir / "mod_1") == "module");
}

TEST_CASE("site defaults from the config file reach real workers, and flags and PET_* win over them",
          "[env][site-config]") {
  TempDir dir;
  const std::string site = dir / "pltrun.toml";
  {
    std::ofstream file(site);
    file << "# what every job on this cluster shares\nnproc-per-node = 3\nmax-restarts = 2\nrole = \"trainer\"\n";
  }
  Finished fromFile = runPltrun({testWorker(), "env", dir.path()}, {"PLTRUN_CONFIG=" + site});
  INFO(fromFile.err);
  REQUIRE(fromFile.status == 0);
  for (int rank = 0; rank < 3; ++rank) {
    json env = workerEnvironment(dir, rank);
    CHECK(env["WORLD_SIZE"] == "3");
    CHECK(env["TORCHELASTIC_MAX_RESTARTS"] == "2");
    CHECK(env["ROLE_NAME"] == "trainer");
  }

  TempDir other;
  Finished overridden = runPltrun({"--nproc-per-node", "2", testWorker(), "env", other.path()},
                                  {"PLTRUN_CONFIG=" + site, "PET_MAX_RESTARTS=0"});
  INFO(overridden.err);
  REQUIRE(overridden.status == 0);
  json env = workerEnvironment(other, 1);
  CHECK(env["WORLD_SIZE"] == "2");                 // the flag
  CHECK(env["TORCHELASTIC_MAX_RESTARTS"] == "0");  // the PET_* variable
  CHECK(env["ROLE_NAME"] == "trainer");            // the file
  CHECK_FALSE(std::filesystem::exists(other / "env_2.json"));

  {
    std::ofstream file(site);
    file << "nproc-per-node = 2\nmax_restart = 2\n";
  }
  Finished bad = runPltrun({testWorker(), "env", dir.path()}, {"PLTRUN_CONFIG=" + site});
  CHECK(bad.status == 2);
  CHECK(bad.err == "pltrun: error: site config " + site +
                       ":2:1: 'max_restart' is not a pltrun option; keys are long options without the dashes, like "
                       "max-restarts = 3 (see pltrun --help)\n");
}

TEST_CASE("a site config that is not TOML stops pltrun with one line naming file:line:column and the key",
          "[env][site-config]") {
  TempDir dir;
  const std::string site = dir / "pltrun.toml";
  const auto writeSite = [&](const std::string& text) { std::ofstream(site) << text; };
  writeSite("# duplicated: CLI11's reader once made it '3,4'\nmax-restarts = 3\nmax-restarts = 4\n");
  Finished duplicated = runPltrun({testWorker(), "env", dir.path()}, {"PLTRUN_CONFIG=" + site});
  CHECK(duplicated.status == 2);
  CHECK(duplicated.err ==
        "pltrun: error: site config " + site +
            ":3:16: not valid TOML at 'max-restarts': error while parsing key-value pair: cannot redefine "
            "existing integer 'max-restarts'; each key is given once: remove one of them\n");
  CHECK_FALSE(std::filesystem::exists(dir / "env_0.json"));  // no worker started

  writeSite("role = \"\"\"multi\"\"\"\nmax-restarts = 'x'\n");
  Finished invalid = runPltrun({testWorker(), "env", dir.path()}, {"PLTRUN_CONFIG=" + site});
  CHECK(invalid.status == 2);
  CHECK_THAT(invalid.err, Catch::Matchers::StartsWith("pltrun: error: --max-restarts: 'x' is not valid") &&
                              Catch::Matchers::EndsWith(" (set in site config " + site + ":2:16)\n"));
  CHECK(std::count(invalid.err.begin(), invalid.err.end(), '\n') == 1);
}

TEST_CASE("the nodes of a static job share the default run id, none as torchrun's, and keep their logs apart",
          "[env]") {
  // Before: each node drew a random id, so TORCHELASTIC_RUN_ID differed across the job.
  TempDir dir, logs;
  const std::string port = std::to_string(freeLoopbackPort());
  for (const char* nodeRank : {"0", "1"}) {
    Finished run =
        runPltrun({"--nnodes", "2", "--node-rank", nodeRank, "--master-addr", "127.0.0.1", "--master-port", port,
                   "--nproc-per-node", "2", "--log-dir", logs.path(), testWorker(), "env", dir.path()});
    INFO(run.err);
    REQUIRE(run.status == 0);
  }
  for (int rank = 0; rank < 4; ++rank) CHECK(workerEnvironment(dir, rank)["TORCHELASTIC_RUN_ID"] == "none");
  int nodeDirectories = 0;
  for (const auto& entry : std::filesystem::directory_iterator(logs / "none")) {
    nodeDirectories += std::filesystem::exists(entry.path() / "attempt_0" / "0" / "stdout.log") ? 1 : 0;
  }
  CHECK(nodeDirectories == 2);
}
