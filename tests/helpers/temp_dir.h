#pragma once
// A fresh directory under the system's temporary one (mkdtemp: private to this user) for
// what a test writes (files, sockets, logs, a fake HOME), removed with everything in it
// when the test ends, however it ends. The one temporary-directory fixture of the tests.

#include <sys/types.h>

#include <string>

namespace pltrun::test {

class TempDir {
 public:
  /// In $TMPDIR (or /tmp) as PREFIX-XXXXXX; throws std::runtime_error when it cannot be made.
  explicit TempDir(const std::string& prefix = "pltrun-test");
  ~TempDir();  ///< std::filesystem::remove_all, errors ignored
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  /// Writes `content` to the file `name` here with permissions `mode`; returns its path.
  /// Throws std::runtime_error when it cannot.
  std::string write(const std::string& name, const std::string& content, mode_t mode = 0644) const;

 private:
  std::string path_;
};

}  // namespace pltrun::test
