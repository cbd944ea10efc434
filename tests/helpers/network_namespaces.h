#pragma once
// Two network namespaces joined by a veth pair, for the tests of agents on different
// "hosts": 10.231.77.1/24 in the first and .2 in the second (private to the namespaces, so
// parallel runs cannot clash); deleted on every exit. Needs root (CAP_SYS_ADMIN) and
// iproute2; where they are missing the tests that use it skip with a warning.

#include <string>

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

 private:
  std::string a_, b_, error_;
  bool createdA_ = false, createdB_ = false;
};

/// False (with a warning) where network namespaces cannot be made here: the test skips.
bool namespacesReady(const NamespacePair& namespaces);

}  // namespace pltrun::test
