// Bad input gets one clear line and a distinct status: 2 for flags, 127 for a program
// that is missing or not executable. No stack traces, nothing started.

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "helpers/child_process.h"
#include "helpers/temp_dir.h"

using namespace pltrun::test;

namespace {

size_t lineCount(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("every unparsable flag value exits 2 with one line naming flag and value", "[bad-input]") {
  const std::vector<std::vector<std::string>> cases = {
      {"--nproc-per-node", "four"},
      {"--nproc_per_node", "0"},
      {"--nproc-per-node", "100000"},  // above 4096: the limit is named
      {"--nnodes", "0"},
      {"--nnodes", "1:4"},
      {"--node-rank", "3"},
      {"--master-port", "70000"},
      {"--max-restarts", "-1"},
      {"--term-timeout", "soon"},
      {"--redirects", "7"},
      {"--tee", "0:9"},
      {"--local-ranks-filter", "0,0"},
      {"--devices", "1,1"},
      {"--rdzv-backend", "etcd"},
      {"--monitor-interval", "x"},
      {"--nnodes", "3:2"},
      {"--rdzv-conf", "bogus=1"},
      {"--rdzv-endpoint", "node0:99999"},
  };
  for (const auto& flag : cases) {
    Finished run = runPltrun({flag[0], flag[1], "true"}, {"PLTRUN_FAKE_GPUS=4"});
    INFO(flag[0] << " " << flag[1] << " -> " << run.err);
    CHECK(run.status == 2);
    CHECK(lineCount(run.err) == 1);
    CHECK(run.err.rfind("pltrun: error: ", 0) == 0);
    std::string bare = flag[0].substr(2);
    std::replace(bare.begin(), bare.end(), '_', '-');
    CHECK(run.err.find(bare) != std::string::npos);
    CHECK(run.err.find(flag[1]) != std::string::npos);
  }
}

TEST_CASE("an elastic job without --rdzv-endpoint exits 2 saying what to add", "[bad-input]") {
  const std::vector<std::vector<std::string>> cases = {
      {"--nnodes", "1:2", "true"},
      {"--rdzv-backend", "c10d", "--nnodes", "2", "true"},
      {"--rdzv-backend", "static", "--nnodes", "1:2", "--rdzv-endpoint", "node0", "true"},
  };
  for (const auto& arguments : cases) {
    Finished run = runPltrun(arguments, {"PLTRUN_FAKE_GPUS=4"});
    INFO(arguments[0] << " " << arguments[1] << " -> " << run.err);
    CHECK(run.status == 2);
    CHECK(lineCount(run.err) == 1);
    CHECK(run.err.rfind("pltrun: error: ", 0) == 0);
    CHECK(run.err.find("--rdzv-endpoint HOST[:PORT]") != std::string::npos);
  }
}

TEST_CASE("multi-host mistakes exit 2 with one line saying what to change", "[bad-input]") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--hosts", "h1:2,h1:2", "true"}, "h1"},
      {{"--hosts", "h1:zero", "true"}, "h1:zero"},
      {{"--hostfile", "/nonexistent/hostfile", "true"}, "/nonexistent/hostfile"},
      {{"--hosts", "h1:2", "--nnodes", "2", "true"}, "--nnodes"},
      {{"--hosts", "h1:2", "--include", "h9", "true"}, "h9"},
      {{"--hosts", "h1:2", "--remote-command", "ssh", "true"}, "{host}"},
      {{"--hosts", "127.0.0.1:2", "--network-interface", "nosuch0", "true"}, "nosuch0"},
      {{"--hosts", "127.0.0.1:2", "-x", "PLTRUN_TEST_SURELY_UNSET", "true"}, "PLTRUN_TEST_SURELY_UNSET"},
      {{"-p", "2222", "true"}, "--hosts"},  // ssh flags need hosts (-x and --env-file work on one node)
      // Host names reach ssh's argv and the remote shell: options and shell syntax refused.
      {{"--hosts", "-oProxyCommand", "true"}, "starts with '-'"},
      {{"--hosts", "a;b:2", "true"}, "has a ';'"},
      {{"--hosts", "h$(id)", "true"}, "has a '$'"},
  };
  for (const auto& [arguments, named] : cases) {
    Finished run = runPltrun(arguments);
    INFO(arguments[0] << " " << arguments[1] << " -> " << run.err);
    CHECK(run.status == 2);
    CHECK(lineCount(run.err) == 1);
    CHECK(run.err.rfind("pltrun: error: ", 0) == 0);
    CHECK(run.err.find(named) != std::string::npos);
  }
}

TEST_CASE("unknown options and a missing PROGRAM exit 2", "[bad-input]") {
  Finished unknown = runPltrun({"--frobnicate", "true"});
  CHECK(unknown.status == 2);
  CHECK(unknown.err.find("--frobnicate") != std::string::npos);
  Finished missing = runPltrun({"--nproc-per-node", "2"});
  CHECK(missing.status == 2);
  CHECK(missing.err.find("PROGRAM is missing") != std::string::npos);
  Finished noValue = runPltrun({"--nproc-per-node"});
  CHECK(noValue.status == 2);
  CHECK(lineCount(noValue.err) == 1);
}

TEST_CASE("a program that is missing or not executable exits 127 with one line", "[bad-input]") {
  TempDir dir;
  std::ofstream(dir / "not_executable") << "#!/bin/sh\n";
  const std::vector<std::string> programs = {"no-such-program-xyz", dir / "missing", dir / "not_executable",
                                             dir / "missing.py"};
  for (const auto& program : programs) {
    Finished run = runPltrun({"--nproc-per-node", "2", program});
    INFO(program << " -> " << run.err);
    CHECK(run.status == 127);
    CHECK(lineCount(run.err) == 1);
    CHECK(run.err.find(program) != std::string::npos);
  }
}

TEST_CASE("flag --help and --version exit 0", "[bad-input]") {
  Finished help = runPltrun({"--help"});
  CHECK(help.status == 0);
  CHECK(help.out.find("--nproc-per-node") != std::string::npos);
  CHECK(help.out.find("--nproc_per_node") != std::string::npos);
  // One usage line, the flags in sections, and a footer with the exit statuses and the
  // environment pltrun reads.
  size_t usageLines = 0;
  for (size_t at = help.out.find("Usage:"); at != std::string::npos; at = help.out.find("Usage:", at + 1)) ++usageLines;
  CHECK(usageLines == 1);
  CHECK(help.out.find("Usage: pltrun [options] PROGRAM [ARGS...]") != std::string::npos);
  for (const char* section : {"Workers on this node:", "Several nodes (static or elastic):", "Output:",
                              "Program and supervision:", "Many hosts from one shell (over ssh):"}) {
    CHECK(help.out.find(section) != std::string::npos);
  }
  CHECK(help.out.find("Exit status:") != std::string::npos);
  CHECK(help.out.find("PLTRUN_SECRET_FILE") != std::string::npos);
  Finished version = runPltrun({"--version"});
  CHECK(version.status == 0);
  CHECK(version.out.find("pltrun") != std::string::npos);
  ChildProcess store({PLTRUN_STORE_BINARY, "--version"});
  Finished storeVersion = store.wait(std::chrono::seconds(10));
  CHECK(storeVersion.status == 0);
  CHECK(storeVersion.out.rfind("pltrun-store ", 0) == 0);
}

TEST_CASE("a one-dash word pltrun does not know is one line and status 2, never the help and 0", "[bad-input]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"-hostx", "/bin/true"}, {"-mca", "btl", "tcp", "/bin/true"}, {"-qm", "/bin/true"}}) {
    Finished run = runPltrun(args);
    INFO(args.front() << ": " << run.out << run.err);
    CHECK(run.status == 2);
    CHECK(run.out.find("Usage") == std::string::npos);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
    CHECK(run.err.find("'" + args.front() + "'") != std::string::npos);
  }
  // mpirun's -n is -np: two workers here.
  Finished mpirunStyle = runPltrun({"-n", "2", "/bin/sh", "-c", "echo $RANK/$WORLD_SIZE"});
  CHECK(mpirunStyle.status == 0);
  CHECK(mpirunStyle.out.find("[rank 1] 1/2") != std::string::npos);
}
