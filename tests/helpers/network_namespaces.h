#pragma once
// Two network namespaces joined by a veth pair, for the tests of agents on different
// "hosts": 10.231.77.1/24 in the first and .2 in the second (private to the namespaces, so
// parallel runs cannot clash); deleted on every exit. Needs root (CAP_SYS_ADMIN) and
// iproute2; where they are missing the tests that use it skip with a warning.

#include <string>
#include <vector>

namespace pltrun::test {

class NamespacePair {
 public:
  NamespacePair();
  ~NamespacePair();
  NamespacePair(const NamespacePair&) = delete;
  NamespacePair& operator=(const NamespacePair&) = delete;

  /// Why the namespaces could not be made; empty when they were.
  const std::string& error() const { return error_; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }
  static constexpr const char* kAddressA = "10.231.77.1";
  static constexpr const char* kAddressB = "10.231.77.2";
  /// Takes b's end of the pair down: nothing is sent or answered any more, and no
  /// connection is reset (a cut cable). Returns false if `ip` failed.
  bool cutB() const;
  /// Brings b's end of the pair up again (the cable plugged back in). False if `ip` failed.
  bool restoreB() const;

 private:
  std::string a_, b_, error_;
  bool createdA_ = false, createdB_ = false;
};

/// A hub network namespace holding a bridge at 10.231.78.254/24, and `spokes` namespaces
/// plugged into it by veth pairs, at 10.231.78.1, .2, ...: hosts on one switch, as a
/// cluster's nodes and its controller are. Addresses private to the namespaces; every
/// namespace is deleted on every exit. Needs root and iproute2, like NamespacePair.
class BridgedNamespaces {
 public:
  explicit BridgedNamespaces(int spokes);
  ~BridgedNamespaces();
  BridgedNamespaces(const BridgedNamespaces&) = delete;
  BridgedNamespaces& operator=(const BridgedNamespaces&) = delete;

  /// Why the namespaces could not be made; empty when they were.
  const std::string& error() const { return error_; }
  const std::string& hub() const { return names_.front(); }
  /// Spoke `index` (0-based) and its address.
  const std::string& spoke(int index) const { return names_.at(index + 1); }
  static std::string spokeAddress(int index) { return "10.231.78." + std::to_string(index + 1); }
  static constexpr const char* kHubAddress = "10.231.78.254";

 private:
  std::vector<std::string> names_;  ///< the hub first, then the spokes; each one made
  std::string error_;
};

/// False (with a warning) where network namespaces cannot be made here: the test skips.
bool namespacesReady(const NamespacePair& namespaces);

}  // namespace pltrun::test
