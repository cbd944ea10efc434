#include "helpers/network_namespaces.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <vector>

#include "helpers/child_process.h"

namespace pltrun::test {

namespace {

using namespace std::chrono_literals;

// Runs `ip ARGS...` to completion; returns its status and stderr.
Finished ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/bin/ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess command(argv);
  return command.wait(20s);
}

// Runs each `ip` command in order; the first failure's description, or empty.
std::string runAll(const std::vector<std::vector<std::string>>& commands) {
  for (const auto& args : commands) {
    Finished done = ip(args);
    if (done.status != 0) {
      std::string command;
      for (const auto& arg : args) command += " " + arg;
      return "`ip" + command + "` failed: " + done.err;
    }
  }
  return "";
}

}  // namespace

NamespacePair::NamespacePair() {
  const std::string stem = "pltrun-e2e-" + std::to_string(getpid()) + "-";
  a_ = stem + "a";
  b_ = stem + "b";
  if (!std::filesystem::exists("/bin/ip")) {
    error_ = "/bin/ip is missing (Debian package iproute2)";
    return;
  }
  Finished added = ip({"netns", "add", a_});
  if (added.status != 0) {
    error_ = "`ip netns add` failed (needs root / CAP_SYS_ADMIN): " + added.err;
    return;
  }
  createdA_ = true;
  Finished addedB = ip({"netns", "add", b_});
  if (addedB.status != 0) {
    error_ = "`ip netns add` failed for the second namespace: " + addedB.err;
    return;
  }
  createdB_ = true;
  const std::vector<std::vector<std::string>> setup = {
      {"-n", a_, "link", "add", "veth-a", "type", "veth", "peer", "name", "veth-b", "netns", b_},
      {"-n", a_, "addr", "add", std::string(kAddressA) + "/24", "dev", "veth-a"},
      {"-n", b_, "addr", "add", std::string(kAddressB) + "/24", "dev", "veth-b"},
      {"-n", a_, "link", "set", "lo", "up"},
      {"-n", b_, "link", "set", "lo", "up"},
      {"-n", a_, "link", "set", "veth-a", "up"},
      {"-n", b_, "link", "set", "veth-b", "up"},
  };
  error_ = runAll(setup);
}

NamespacePair::~NamespacePair() {
  if (createdA_) ip({"netns", "del", a_});  // takes veth-a, and so its peer, with it
  if (createdB_) ip({"netns", "del", b_});
}

bool NamespacePair::cutB() const { return ip({"-n", b_, "link", "set", "veth-b", "down"}).status == 0; }

bool NamespacePair::restoreB() const { return ip({"-n", b_, "link", "set", "veth-b", "up"}).status == 0; }

BridgedNamespaces::BridgedNamespaces(int spokes) {
  if (!std::filesystem::exists("/bin/ip")) {
    error_ = "/bin/ip is missing (Debian package iproute2)";
    return;
  }
  const std::string stem = "pltrun-br-" + std::to_string(getpid()) + "-";
  for (int index = 0; index <= spokes; ++index) {
    const std::string name = stem + (index == 0 ? std::string("hub") : std::to_string(index));
    Finished added = ip({"netns", "add", name});
    if (added.status != 0) {
      error_ = "`ip netns add` failed (needs root / CAP_SYS_ADMIN): " + added.err;
      return;
    }
    names_.push_back(name);
  }
  std::vector<std::vector<std::string>> setup = {
      {"-n", hub(), "link", "set", "lo", "up"},
      {"-n", hub(), "link", "add", "br0", "type", "bridge"},
      {"-n", hub(), "addr", "add", std::string(kHubAddress) + "/24", "dev", "br0"},
      {"-n", hub(), "link", "set", "br0", "up"},
  };
  for (int index = 0; index < spokes; ++index) {
    const std::string port = "port" + std::to_string(index);
    setup.push_back({"-n", hub(), "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", spoke(index)});
    setup.push_back({"-n", hub(), "link", "set", port, "master", "br0", "up"});
    setup.push_back({"-n", spoke(index), "addr", "add", spokeAddress(index) + "/24", "dev", "eth0"});
    setup.push_back({"-n", spoke(index), "link", "set", "eth0", "up"});
    setup.push_back({"-n", spoke(index), "link", "set", "lo", "up"});
  }
  error_ = runAll(setup);
}

BridgedNamespaces::~BridgedNamespaces() {
  for (const std::string& name : names_) ip({"netns", "del", name});  // takes its veth ends with it
}

bool namespacesReady(const NamespacePair& namespaces) {
  if (namespaces.error().empty()) return true;
  WARN("skipped: " << namespaces.error());
  return false;
}

}  // namespace pltrun::test
