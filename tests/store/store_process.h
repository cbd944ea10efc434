#pragma once
// The real pltrun-store executable on 127.0.0.1, port 0, for the length of a test: started
// with extra flags, its port read from its first line, stopped with SIGTERM and reaped.

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "helpers/child_process.h"
#include "helpers/store_client_options.h"
#include "helpers/temp_dir.h"
#include "pltrun/tcp_store.h"

namespace pltrun::test {

class StoreProcess {
 public:
  /// `wrapper` runs it (e.g. prlimit with its options), `extra` are its own flags.
  explicit StoreProcess(std::vector<std::string> extra = {}, std::vector<std::string> wrapper = {}) {
    std::vector<std::string> argv = wrapper;
    argv.insert(argv.end(), {PLTRUN_STORE_BINARY, "--port", "0"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<ChildProcess>(argv, std::vector<std::string>{}, dir_ / "out.txt");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::string line;
    while ((line = readFile(dir_ / "out.txt")).find('\n') == std::string::npos) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    port_ = std::stoi(line.substr(line.rfind(':') + 1));
  }
  ~StoreProcess() {
    process_->signal(SIGTERM);
    process_->wait(std::chrono::seconds(10));
  }
  std::string port() const { return std::to_string(port_); }
  int portNumber() const { return port_; }
  pid_t pid() const { return process_->pid(); }
  /// True while the process runs (not exited, not a zombie).
  bool alive() const {
    std::ifstream stat("/proc/" + std::to_string(pid()) + "/stat");
    std::string pid, name, state;
    return static_cast<bool>(stat >> pid >> name >> state) && state != "Z";
  }
  /// A field of /proc/PID/status in kB (VmRSS, VmHWM); -1 when missing.
  long statusKb(const std::string& field) const {
    std::ifstream status("/proc/" + std::to_string(pid()) + "/status");
    std::string name;
    long value = -1;
    while (status >> name) {
      if (name == field + ":") {
        status >> value;
        return value;
      }
      std::getline(status, name);
    }
    return -1;
  }
  /// User plus system CPU time the process has used, in seconds.
  double cpuSeconds() const {
    std::ifstream stat("/proc/" + std::to_string(pid()) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string field;
    long ticks = 0;
    for (int index = 3; fields >> field; ++index) {
      if (index == 14 || index == 15) ticks += std::stol(field);  // utime, stime
      if (index == 15) break;
    }
    return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  /// What it has printed so far (its log says why it closed a connection).
  std::string log() const { return readFile(dir_ / "out.txt") + process_->stderrSoFar(); }

 private:
  TempDir dir_;
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
};

/// pltrun's own client to a store on 127.0.0.1:`port` (2 s to connect, 5 s a reply).
inline std::unique_ptr<TcpStore> storeClient(int port, const std::string& secret = "") {
  TcpStoreOptions options = loopbackStoreOptions(port, secret);
  options.connectTimeout = std::chrono::seconds(2);
  return std::make_unique<TcpStore>(options);
}

}  // namespace pltrun::test
