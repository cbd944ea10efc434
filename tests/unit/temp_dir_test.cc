// The tests' one temporary-directory fixture (helpers/temp_dir.h): fresh and private, and
// gone with everything in it when it goes, without following a link out of it.

#include "helpers/temp_dir.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "helpers/child_process.h"

namespace fs = std::filesystem;
using pltrun::test::readFile;
using pltrun::test::TempDir;

TEST_CASE("TempDir is a fresh private directory, removed with all it holds but not what its links name", "[helpers]") {
  const TempDir outside("pltrun-temp-dir-outside");
  const std::string kept = outside.write("kept", "still here\n");
  std::string path;
  {
    const TempDir dir("pltrun-temp-dir-test");
    path = dir.path();
    struct stat info {};
    REQUIRE(stat(path.c_str(), &info) == 0);
    CHECK(S_ISDIR(info.st_mode));
    CHECK((info.st_mode & 0777) == 0700);
    CHECK(fs::path(path).filename().string().rfind("pltrun-temp-dir-test-", 0) == 0);
    CHECK(TempDir("pltrun-temp-dir-test").path() != path);

    fs::create_directories(dir / "a/b/c");
    const std::string script = dir.write("a/b/c/run.sh", "#!/bin/sh\n", 0755);
    CHECK(readFile(script) == "#!/bin/sh\n");
    REQUIRE(stat(script.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0755);
    fs::create_directory_symlink(outside.path(), dir / "a/link");
  }
  CHECK_FALSE(fs::exists(path));
  CHECK(readFile(kept) == "still here\n");  // the link went, not the directory it named
}
