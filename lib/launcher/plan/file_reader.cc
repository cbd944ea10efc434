#include "launcher/plan/file_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pltrun {

bool fileExistsOnDisk(const std::string& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 || errno != ENOENT;  // unreadable is still "there": say why later
}

std::string readFileFromDisk(const std::string& path) {
  std::error_code ignored;
  // Opening a directory succeeds; say what is wrong before reading it fails obscurely.
  if (std::filesystem::is_directory(path, ignored)) throw FileReadError(FileReadError::Reason::IsDirectory, "");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const bool missing = errno == ENOENT || errno == ENOTDIR;
    throw FileReadError(missing ? FileReadError::Reason::Missing : FileReadError::Reason::CannotOpen,
                        std::strerror(errno));
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) throw FileReadError(FileReadError::Reason::CannotRead, std::strerror(errno));
  return content.str();
}

}  // namespace pltrun
