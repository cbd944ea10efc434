#include "launcher/command_line/process_inputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "base/file_control.h"
#include "base/read_to_end.h"

extern char** environ;

namespace pltrun {
namespace {

[[noreturn]] void throwOpenError(int error) {
  const bool missing = error == ENOENT || error == ENOTDIR;
  throw FileReadError(missing ? FileReadError::Reason::Missing : FileReadError::Reason::CannotOpen,
                      std::strerror(error));
}

// The directory that holds `path`'s last name.
std::string directoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Refuses what another user could have written; the descriptor is the file read, so a file
// swapped after the check is the one judged.
void refuseOthersFiles(const std::string& path, int fd) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode) && !ownedByYouOrRoot(link)) {
    throw FileReadError(FileReadError::Reason::OthersControl,
                        "is a symbolic link that belongs to " + userText(link.st_uid));
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0) throw FileReadError(FileReadError::Reason::CannotRead, std::strerror(errno));
  if (S_ISDIR(status.st_mode)) throw FileReadError(FileReadError::Reason::IsDirectory, "");
  if (!S_ISREG(status.st_mode)) throw FileReadError(FileReadError::Reason::CannotOpen, "not a regular file");
  std::optional<std::string> why = othersCanChange(status);
  if (!why) why = othersCanReplaceIn(directoryOf(path));
  if (why) throw FileReadError(FileReadError::Reason::OthersControl, *why);
}

std::string readDescriptor(int fd) {
  ReadToEnd read = readToEnd(fd, std::string().max_size());
  if (read.error != 0) throw FileReadError(FileReadError::Reason::CannotRead, std::strerror(read.error));
  return std::move(read.content);
}

}  // namespace

Environment currentEnvironment() {
  Environment env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    size_t equals = text.find('=');
    if (equals != std::string_view::npos) env.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return env;
}

bool fileExistsOnDisk(const std::string& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 || errno != ENOENT;  // unreadable is still "there": say why later
}

std::string readFileFromDisk(const std::string& path) {
  std::error_code ignored;
  // Opening a directory succeeds; say what is wrong before reading it fails obscurely.
  if (std::filesystem::is_directory(path, ignored)) throw FileReadError(FileReadError::Reason::IsDirectory, "");
  std::ifstream in(path, std::ios::binary);
  if (!in) throwOpenError(errno);
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) throw FileReadError(FileReadError::Reason::CannotRead, std::strerror(errno));
  return content.str();
}

std::string readOwnFileFromDisk(const std::string& path) {
  // O_NONBLOCK: a FIFO planted under the name must not hang the launcher before it is refused.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throwOpenError(errno);
  try {
    refuseOthersFiles(path, fd);
    std::string content = readDescriptor(fd);
    ::close(fd);
    return content;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

FileAccess fileAccessOnDisk(const std::string& path) {
  // One stat says whether anything is there (a PATH lookup probes every entry, and most
  // hold nothing); access() is asked only about what exists.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return {};
  FileAccess access;
  access.exists = true;
  access.readable = ::access(path.c_str(), R_OK) == 0;
  access.executable = S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
  return access;
}

std::string pythonInterpreter(const Environment& inherited) {
  const std::optional<std::string> chosen = environmentValue(inherited, "PYTHON_EXEC");
  if (chosen && !chosen->empty()) return *chosen;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "python3";
  // A batch script often runs VENV/bin/pltrun without activating VENV: its python3 on PATH
  // is then the system's, which lacks what the job installed in VENV.
  const std::filesystem::path venv = self.parent_path().parent_path();
  const std::filesystem::path python = self.parent_path() / "python3";
  const bool inVenv = std::filesystem::exists(venv / "pyvenv.cfg", error) && access(python.c_str(), X_OK) == 0;
  if (!inVenv || std::filesystem::exists(venv / "pipx_metadata.json", error)) return "python3";
  return python.string();
}

}  // namespace pltrun
