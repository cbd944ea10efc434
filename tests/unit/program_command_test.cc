// resolveProgramCommand and findExecutable, against real files in a temporary directory
// (fileAccessOnDisk), and against a made-up file system: they ask only the probe given.

#include "launcher/plan/program_command.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "helpers/temp_dir.h"
#include "launcher/command_line/process_inputs.h"
#include "pltrun/error.h"

using Catch::Matchers::Contains;
using pltrun::Error;
using pltrun::ErrorCode;
using pltrun::FileAccess;
using pltrun::fileAccessOnDisk;
using pltrun::findExecutable;
using pltrun::LaunchConfig;
using pltrun::ProgramCommand;
using pltrun::ProgramKind;
using pltrun::resolveProgramCommand;
using pltrun::test::TempDir;

namespace {

using Args = std::vector<std::string>;

// What these tests write for a program: a shell script that exits 0.
const std::string kScript = "#!/bin/sh\nexit 0\n";

LaunchConfig configFor(const std::string& program, ProgramKind kind, Args args = {}) {
  LaunchConfig config;
  config.program = program;
  config.programKind = kind;
  config.programArgs = std::move(args);
  return config;
}

// Requires resolveProgramCommand to throw NotFound; returns the message.
std::string notFound(const LaunchConfig& config, const std::string& python, const std::string& path,
                     const pltrun::FileAccessProbe& files = fileAccessOnDisk) {
  try {
    resolveProgramCommand(config, python, path, files);
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::NotFound);
    return error.what();
  }
  FAIL("resolveProgramCommand accepted '" << config.program << "'");
  return {};
}

}  // namespace

TEST_CASE("a .py script runs under Python with -u", "[program_command]") {
  TempDir dir;
  const std::string python = dir.write("python3", kScript, 0755);
  const std::string script = dir.write("train.py", "print('hi')\n", 0644);

  SECTION("interpreter given by path") {
    ProgramCommand command =
        resolveProgramCommand(configFor(script, ProgramKind::Auto, {"--lr", "0.1"}), python, "", fileAccessOnDisk);
    CHECK(command.executable == python);
    CHECK(command.argv == Args{python, "-u", script, "--lr", "0.1"});
  }
  SECTION("interpreter found along PATH; argv[0] keeps the name") {
    ProgramCommand command = resolveProgramCommand(configFor(script, ProgramKind::Auto), "python3",
                                                   "/nonexistent-dir:" + dir.path(), fileAccessOnDisk);
    CHECK(command.executable == dir.path() + "/python3");
    CHECK(command.argv == Args{"python3", "-u", script});
  }
}

TEST_CASE("flag -m runs a module under Python", "[program_command]") {
  TempDir dir;
  const std::string python = dir.write("python3", kScript, 0755);
  ProgramCommand command = resolveProgramCommand(configFor("pkg.train", ProgramKind::Module, {"--epochs", "2"}), python,
                                                 "", fileAccessOnDisk);
  CHECK(command.executable == python);
  CHECK(command.argv == Args{python, "-u", "-m", "pkg.train", "--epochs", "2"});
  SECTION("a module name ending in .py is still a module, not a script") {
    ProgramCommand odd = resolveProgramCommand(configFor("odd.py", ProgramKind::Module), python, "", fileAccessOnDisk);
    CHECK(odd.argv == Args{python, "-u", "-m", "odd.py"});
  }
}

TEST_CASE("flag --run-path runs a script under Python whatever its name", "[program_command]") {
  TempDir dir;
  const std::string python = dir.write("python3", kScript, 0755);
  const std::string script = dir.write("train", kScript, 0644);  // no .py, not executable: torch's tests do this
  ProgramCommand command =
      resolveProgramCommand(configFor(script, ProgramKind::Script, {"--lr", "1"}), python, "", fileAccessOnDisk);
  CHECK(command.executable == python);
  CHECK(command.argv == Args{python, "-u", script, "--lr", "1"});
  CHECK_THAT(notFound(configFor(dir.path() + "/absent", ProgramKind::Script), python, ""),
             Contains("does not exist or cannot be read"));
}

TEST_CASE("flag --no-python executes a .py file directly", "[program_command]") {
  TempDir dir;
  const std::string script = dir.write("tool.py", kScript, 0755);
  ProgramCommand command = resolveProgramCommand(configFor(script, ProgramKind::NoPython, {"a", "b"}),
                                                 "/no/such/python", "", fileAccessOnDisk);
  CHECK(command.executable == script);
  CHECK(command.argv == Args{script, "a", "b"});
  SECTION("it must then be executable") {
    const std::string plain = dir.write("plain.py", kScript, 0644);
    CHECK_THAT(notFound(configFor(plain, ProgramKind::NoPython), "/no/such/python", ""), Contains("not an executable"));
  }
}

TEST_CASE("a plain program is looked up along the PATH given", "[program_command]") {
  SECTION("true in /usr/bin:/bin") {
    ProgramCommand command = resolveProgramCommand(configFor("true", ProgramKind::Auto, {"x"}), "python3",
                                                   "/usr/bin:/bin", fileAccessOnDisk);
    CHECK((command.executable == "/usr/bin/true" || command.executable == "/bin/true"));
    CHECK(command.argv == Args{"true", "x"});
  }
  SECTION("the first PATH entry that holds an executable wins") {
    TempDir first, second;
    first.write("tool", kScript, 0644);  // not executable: skipped
    const std::string tool = second.write("tool", kScript, 0755);
    ProgramCommand command = resolveProgramCommand(configFor("tool", ProgramKind::Auto), "python3",
                                                   first.path() + ":" + second.path(), fileAccessOnDisk);
    CHECK(command.executable == tool);
    CHECK(command.argv == Args{"tool"});
  }
  SECTION("a program named by path is not looked up") {
    TempDir dir;
    const std::string tool = dir.write("tool", kScript, 0755);
    CHECK(resolveProgramCommand(configFor(tool, ProgramKind::Auto), "python3", "", fileAccessOnDisk).executable ==
          tool);
  }
}

TEST_CASE("missing or unusable programs are NotFound, naming them", "[program_command]") {
  TempDir dir;
  const std::string python = dir.write("python3", kScript, 0755);

  SECTION("a name not on the PATH") {
    std::string message = notFound(configFor("pltrun-no-such-program", ProgramKind::Auto), python, "/usr/bin:/bin");
    CHECK_THAT(message, Contains("pltrun-no-such-program"));
    CHECK_THAT(message, Contains("PATH"));
  }
  SECTION("a path that does not exist") {
    std::string missing = dir.path() + "/missing";
    std::string message = notFound(configFor(missing, ProgramKind::Auto), python, "");
    CHECK_THAT(message, Contains(missing));
    CHECK_THAT(message, Contains("does not exist"));
  }
  SECTION("a path that exists but is not executable") {
    const std::string data = dir.write("data.txt", kScript, 0644);
    std::string message = notFound(configFor(data, ProgramKind::Auto), python, "");
    CHECK_THAT(message, Contains(data));
    CHECK_THAT(message, Contains("not an executable"));
  }
  SECTION("a directory") {
    CHECK_THAT(notFound(configFor(dir.path(), ProgramKind::Auto), python, ""), Contains("not an executable"));
  }
  SECTION("a missing .py script") {
    std::string missing = dir.path() + "/missing.py";
    std::string message = notFound(configFor(missing, ProgramKind::Auto), python, "");
    CHECK_THAT(message, Contains(missing));
  }
  SECTION("a missing Python interpreter (PYTHON_EXEC)") {
    const std::string script = dir.write("train.py", kScript, 0644);
    std::string message = notFound(configFor(script, ProgramKind::Auto), "pltrun-no-such-python", "/usr/bin:/bin");
    CHECK_THAT(message, Contains("pltrun-no-such-python"));
    CHECK_THAT(message, Contains("PYTHON_EXEC"));
    std::string byPath = notFound(configFor("m", ProgramKind::Module), dir.path() + "/nopython", "");
    CHECK_THAT(byPath, Contains(dir.path() + "/nopython"));
  }
}

TEST_CASE("findExecutable", "[program_command]") {
  TempDir dir;
  const std::string tool = dir.write("tool", kScript, 0755);
  dir.write("data", kScript, 0644);
  CHECK(findExecutable("tool", dir.path(), fileAccessOnDisk) == tool);
  CHECK(findExecutable("tool", "/nonexistent:" + dir.path(), fileAccessOnDisk) == tool);
  CHECK(findExecutable(tool, "", fileAccessOnDisk) == tool);
  CHECK(findExecutable("data", dir.path(), fileAccessOnDisk).empty());
  CHECK(findExecutable(dir.path() + "/data", "", fileAccessOnDisk).empty());
  CHECK(findExecutable("tool", "/nonexistent", fileAccessOnDisk).empty());
  CHECK(findExecutable("", dir.path(), fileAccessOnDisk).empty());
  CHECK(findExecutable(dir.path(), "", fileAccessOnDisk).empty());
}

TEST_CASE("resolveProgramCommand asks the file system only through the probe it is given", "[program_command]") {
  // Paths that exist nowhere on disk: only the probe knows them.
  auto files = [](const std::string& path) {
    FileAccess access;
    access.exists = path.rfind("/made-up/", 0) == 0;
    access.readable = access.exists;
    access.executable = path == "/made-up/bin/python3" || path == "/made-up/bin/tool";
    return access;
  };
  CHECK(findExecutable("tool", "/elsewhere:/made-up/bin", files) == "/made-up/bin/tool");
  CHECK(findExecutable("tool", "/elsewhere", files).empty());
  ProgramCommand command =
      resolveProgramCommand(configFor("/made-up/train.py", ProgramKind::Auto), "python3", "/made-up/bin", files);
  CHECK(command.executable == "/made-up/bin/python3");
  CHECK(command.argv == Args{"python3", "-u", "/made-up/train.py"});
  CHECK_THAT(notFound(configFor("/made-up/data", ProgramKind::Auto), "python3", "/made-up/bin", files),
             Contains("is not an executable file"));
  CHECK_THAT(notFound(configFor("/absent/tool", ProgramKind::Auto), "python3", "/made-up/bin", files),
             Contains("does not exist"));
}
