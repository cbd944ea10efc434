// readOwnFileFromDisk: the files pltrun reads because of where it runs (a hostfile,
// ./.deepspeed_env, an env file, the site config) are read only when no other user could have
// written them, judged on real files, with a real second user (helpers/other_user.h) as owner.

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "base/file_control.h"
#include "helpers/other_user.h"
#include "helpers/temp_dir.h"
#include "launcher/command_line/process_inputs.h"

using pltrun::FileReadError;
using pltrun::readOwnFileFromDisk;
using pltrun::test::TempDir;

namespace {

std::string written(const std::string& path, const std::string& content, mode_t mode) {
  std::ofstream(path) << content;
  REQUIRE(chmod(path.c_str(), mode) == 0);
  return path;
}

// Why readOwnFileFromDisk refused `path` as another user's (what() of OthersControl).
std::string othersControl(const std::string& path) {
  try {
    readOwnFileFromDisk(path);
  } catch (const FileReadError& error) {
    CHECK(error.reason() == FileReadError::Reason::OthersControl);
    return error.what();
  }
  FAIL("read " << path);
  return "";
}

#define SKIP_WITHOUT_OTHER_USERS()                      \
  if (!pltrun::test::canActAsOtherUsers()) {            \
    WARN("skipped: acting as another user needs root"); \
    return;                                             \
  }

}  // namespace

TEST_CASE("own files: yours, writable by no one else, in a directory of yours, are read", "[own_file]") {
  TempDir dir;
  CHECK(readOwnFileFromDisk(written(dir / "hosts", "a slots=2\n", 0644)) == "a slots=2\n");
  CHECK(readOwnFileFromDisk(written(dir / "private", "x", 0600)) == "x");
  std::filesystem::create_symlink(dir / "hosts", dir / "link");  // your own link
  CHECK(readOwnFileFromDisk(dir / "link") == "a slots=2\n");
}

TEST_CASE("own files: group- or world-writable ones are refused, naming the mode", "[own_file]") {
  TempDir dir;
  for (mode_t mode : {0664, 0646, 0666, 0620}) {
    CAPTURE(mode);
    CHECK(othersControl(written(dir / "shared", "x", mode)) ==
          "is writable by group or others (mode " + pltrun::octalMode(mode) + ")");
  }
}

TEST_CASE("own files: missing, directories and FIFOs are told apart, and a FIFO does not hang", "[own_file]") {
  TempDir dir;
  const auto reasonOf = [](const std::string& path) {
    try {
      readOwnFileFromDisk(path);
    } catch (const FileReadError& error) {
      return error.reason();
    }
    FAIL("read " << path);
    return FileReadError::Reason::CannotRead;
  };
  CHECK(reasonOf(dir / "missing") == FileReadError::Reason::Missing);
  CHECK(reasonOf(dir.path()) == FileReadError::Reason::IsDirectory);
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK(reasonOf(dir / "fifo") == FileReadError::Reason::CannotOpen);
}

TEST_CASE("own files: another user's file, link or directory is refused, naming the user", "[own_file]") {
  SKIP_WITHOUT_OTHER_USERS();
  const pltrun::test::OtherUser& other = pltrun::test::otherUser(1);
  const std::string owner = other.name + " (uid " + std::to_string(other.uid) + ")";
  TempDir dir;
  REQUIRE(chmod(dir.path().c_str(), 0755) == 0);
  const std::string theirs = written(dir / "theirs", "a\n", 0644);
  pltrun::test::giveTo(other, theirs);
  CHECK(othersControl(theirs) == "belongs to " + owner);
  // Their link to your own file: they choose what it names.
  const std::string mine = written(dir / "mine", "a\n", 0644);
  std::filesystem::create_symlink(mine, dir / "their-link");
  pltrun::test::giveTo(other, dir / "their-link");
  CHECK(othersControl(dir / "their-link") == "is a symbolic link that belongs to " + owner);
  // Your file in their directory: they can rename it away and put theirs in its place.
  const std::string theirDirectory = dir / "their-directory";
  std::filesystem::create_directory(theirDirectory);
  pltrun::test::giveTo(other, theirDirectory);
  CHECK(othersControl(written(theirDirectory + "/mine", "a\n", 0644)) ==
        "is in " + theirDirectory + ", which belongs to " + owner);
}

TEST_CASE("own files: in a directory others can write, read only when it has the sticky bit (as /tmp)", "[own_file]") {
  TempDir dir;
  const std::string shared = dir / "shared";
  std::filesystem::create_directory(shared);
  const std::string mine = written(shared + "/mine", "a\n", 0644);
  REQUIRE(chmod(shared.c_str(), 0777) == 0);
  CHECK(othersControl(mine) ==
        "is in " + shared + ", which others can write without the sticky bit (mode 0777), so they can swap it");
  REQUIRE(chmod(shared.c_str(), 0775) == 0);
  CHECK_THAT(othersControl(mine), Catch::Contains("(mode 0775)"));
  REQUIRE(chmod(shared.c_str(), 01777) == 0);
  CHECK(readOwnFileFromDisk(mine) == "a\n");
  // A name without a directory is judged in the working directory.
  CHECK(pltrun::shownPath("hosts") == "./hosts");
  CHECK(pltrun::shownPath("/etc/hosts") == "/etc/hosts");
}
