// Real PyTorch clients (Debian's python3-torch 1.13, run by /usr/bin/python3) against the
// real pltrun-store: every TCPStore call, and 4 processes forming a gloo process group
// through it. torch 2.6 and 2.14 clients run from Debian trixie and forky chroots
// (scripts/chroot/torch.sh, built by scripts/test.sh).

#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "helpers/child_process.h"
#include "pltrun/tcp_store.h"
#include "store/store_process.h"

using namespace pltrun::test;
using namespace std::chrono_literals;

namespace {

const std::string kScripts = std::string(TESTS_SOURCE_DIR) + "/store/";

Finished runPython(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/python3"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess python(argv);
  return python.wait(120s);
}

}  // namespace

TEST_CASE("torch 1.13's TCPStore client drives pltrun-store through every call", "[store][torch]") {
  StoreProcess store;
  Finished run = runPython({kScripts + "torch_store_client.py", store.port()});
  INFO(run.out << run.err);
  CHECK(run.status == 0);
  CHECK(run.out.find("all torch TCPStore calls behaved") != std::string::npos);
}

TEST_CASE("4 torch processes form a gloo group through pltrun-store and all-reduce", "[store][torch]") {
  StoreProcess store;
  Finished run = runPython({kScripts + "torch_store_gloo.py", store.port(), "4"});
  INFO(run.out << run.err);
  CHECK(run.status == 0);
  CHECK(run.out.find("all_reduce ok on 4 ranks") != std::string::npos);
}

TEST_CASE("torch 2.x clients (trixie's 2.6 and forky's 2.14, in chroots) drive pltrun-store",
          "[store][torch][torch2]") {
  const std::string suite = GENERATE("trixie", "forky");
  const std::string script = std::string(TESTS_SOURCE_DIR) + "/../scripts/chroot/torch.sh";
  ChildProcess ready({"/bin/bash", script, suite, "ready"});
  INFO("the " << suite << " chroot is needed: bash scripts/chroot/torch.sh " << suite << " ensure");
  REQUIRE(ready.wait(30s).status == 0);
  StoreProcess store;
  ChildProcess python({"/bin/bash", script, suite, "run", "--bind", std::string(TESTS_SOURCE_DIR) + "/store", "--",
                       "python3", kScripts + "torch_store_client.py", store.port(), "--torch2"});
  Finished run = python.wait(240s);
  INFO(suite << ":\n" << run.out << run.err);
  CHECK(run.status == 0);
  CHECK(run.out.find("all torch TCPStore calls behaved") != std::string::npos);
  // torch 2.14's client asks for the key list (LIST_KEYS, command 17) and has barrier().
  if (suite == "forky") CHECK(run.out.find("list_keys and barrier behaved") != std::string::npos);
}

TEST_CASE("keys set by pltrun's C++ client are the keys torch's client reads", "[store][torch]") {
  StoreProcess store;
  pltrun::TcpStoreOptions options;
  options.port = std::stoi(store.port());
  pltrun::TcpStore cpp(options);
  cpp.set("from-cpp", "hello python");
  const std::string script =
      "import datetime, sys\n"
      "from torch.distributed import TCPStore\n"
      "s = TCPStore('127.0.0.1', int(sys.argv[1]), is_master=False, timeout=datetime.timedelta(seconds=10))\n"
      "assert s.get('from-cpp') == b'hello python', s.get('from-cpp')\n"
      "s.set('from-python', 'hello c++')\n"
      "print('python read it')\n";
  Finished run = runPython({"-c", script, store.port()});
  INFO(run.err);
  CHECK(run.status == 0);
  CHECK(cpp.get("from-python", 10s) == "hello c++");
}
