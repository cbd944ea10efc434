// readSecretFile: what it accepts (a private file or standard input, its newline dropped)
// and what it refuses, each with the advice in the message. Real files in a temporary
// directory; standard input replaced by a pipe for the "-" case.

#include "rendezvous/store/server/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "helpers/temp_dir.h"
#include "pltrun/error.h"

using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::rdzv::readSecretFile;
using pltrun::test::TempDir;

namespace {

std::string refusal(const std::string& path) {
  try {
    readSecretFile(path, "secret_file");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::InvalidArgument);
    return error.what();
  }
  FAIL("accepted " << path);
  return "";
}

// Runs readSecretFile("-") with `input` on standard input.
std::string readFromStandardInput(const std::string& input) {
  int ends[2];
  REQUIRE(pipe(ends) == 0);
  REQUIRE(write(ends[1], input.data(), input.size()) == static_cast<ssize_t>(input.size()));
  close(ends[1]);
  const int saved = dup(STDIN_FILENO);
  dup2(ends[0], STDIN_FILENO);
  close(ends[0]);
  std::string secret;
  try {
    secret = readSecretFile("-", "secret_file");
  } catch (...) {
    dup2(saved, STDIN_FILENO);
    close(saved);
    throw;
  }
  dup2(saved, STDIN_FILENO);
  close(saved);
  return secret;
}

}  // namespace

TEST_CASE("a private secret file is read, its line ending dropped", "[secret_file]") {
  TempDir dir("pltrun-secret-test");
  CHECK(readSecretFile(dir.write("lf", "sixteen bytes at least\n", 0600), "x") == "sixteen bytes at least");
  CHECK(readSecretFile(dir.write("crlf", "sixteen bytes at least\r\n", 0400), "x") == "sixteen bytes at least");
  CHECK(readSecretFile(dir.write("none", "sixteen bytes at least", 0600), "x") == "sixteen bytes at least");
  // Inner bytes, spaces and binary included, are the secret's own.
  const std::string binary("\x01 two\0words\xff sixteen", 20);
  CHECK(readSecretFile(dir.write("binary", binary, 0600), "x") == binary);
}

TEST_CASE("a secret file that others could read or write is refused with the chmod that fixes it", "[secret_file]") {
  TempDir dir("pltrun-secret-test");
  for (mode_t mode : {0640, 0604, 0620, 0602, 0644, 0666}) {
    const std::string path = dir.write("shared" + std::to_string(mode), "sixteen bytes at least\n", mode);
    const std::string message = refusal(path);
    CAPTURE(mode, message);
    CHECK_THAT(message, Catch::StartsWith("secret_file: '" + path + "'"));
    CHECK_THAT(message, Catch::Contains("chmod 600 '" + path + "'"));
  }
}

TEST_CASE("empty, short, oversized, missing and non-regular secret files are refused", "[secret_file]") {
  TempDir dir("pltrun-secret-test");
  CHECK_THAT(refusal(dir.write("empty", "\n", 0600)), Catch::Contains("is empty") && Catch::Contains("head -c 32"));
  CHECK_THAT(refusal(dir.write("short", "fifteen bytes!!\n", 0600)),
             Catch::Contains("holds 15 bytes") && Catch::Contains("at least 16"));
  CHECK_THAT(refusal(dir.write("large", std::string(65 * 1024, 's'), 0600)), Catch::Contains("over 64 KiB"));
  CHECK_THAT(refusal(dir.path() + "/missing"), Catch::Contains("cannot open") && Catch::Contains("No such file"));
  mkdir((dir.path() + "/directory").c_str(), 0700);
  CHECK_THAT(refusal(dir.path() + "/directory"), Catch::Contains("not a regular file"));
}

TEST_CASE("\"-\" reads the secret from standard input", "[secret_file]") {
  CHECK(readFromStandardInput("a secret handed over by the driver\n") == "a secret handed over by the driver");
  CHECK_THROWS_WITH(readFromStandardInput(""), Catch::Contains("standard input is empty"));
  CHECK_THROWS_WITH(readFromStandardInput("too short\n"), Catch::Contains("standard input holds 9 bytes"));
}

TEST_CASE("a secret file of another user is refused", "[secret_file]") {
  if (geteuid() != 0) {
    WARN("skipped: giving a file to another user needs root");
    return;
  }
  TempDir dir("pltrun-secret-test");
  const std::string path = dir.write("theirs", "sixteen bytes at least\n", 0600);
  REQUIRE(chown(path.c_str(), 65534, 65534) == 0);  // nobody
  CHECK_THAT(refusal(path), Catch::Contains("belongs to another user (uid 65534)"));
}
