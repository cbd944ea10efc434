#pragma once
// A fresh directory under the system's temporary one for what a unit test writes (sockets,
// lock files), removed with everything in it when the test ends.

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

namespace pltrun_test {

class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& prefix = "pltrun-unit") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  std::string path() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace pltrun_test
