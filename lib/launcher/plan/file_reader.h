#pragma once
// Reading a whole file, behind a function type: the command-line parser and the plan are
// handed the real reader (command_line/process_inputs.h) by main() and the modes, and a fake
// one by the tests, so they do no I/O of their own.

#include <functional>
#include <stdexcept>
#include <string>

namespace pltrun {

/// Why a file could not be read; the caller words the error for the flag that named it.
class FileReadError : public std::runtime_error {
 public:
  enum class Reason {
    IsDirectory,  ///< the path names a directory
    Missing,      ///< no file at the path (ENOENT, ENOTDIR)
    CannotOpen,   ///< not permitted, ...: what() says why
    CannotRead,   ///< opened, then reading failed: what() says why
    /// another user could have written it (readOwnFileFromDisk): what() says why, as the
    /// end of a sentence about the file ("belongs to pltrun-other1 (uid 999)")
    OthersControl,
  };
  FileReadError(Reason reason, const std::string& systemMessage) : std::runtime_error(systemMessage), reason_(reason) {}
  Reason reason() const { return reason_; }

 private:
  Reason reason_;
};

/// The whole content of the file at `path`; throws FileReadError when it cannot be read.
using FileReader = std::function<std::string(const std::string& path)>;

/// The one line for a file refused with Reason::OthersControl; `what` names it ("hostfile").
std::string othersFileRefusal(const std::string& what, const std::string& path, const FileReadError& error);

/// `path` as a message names a file: "./.deepspeed_env" for a name without a directory.
std::string shownPath(const std::string& path);

/// Whether something is at `path`: a probe that throws nothing, for a file most machines
/// lack (/etc/pltrun.toml), so that a launch without one throws no exception and opens no
/// stream (a lower peak memory; docs/PERFORMANCE.md, launch).
using FileProbe = std::function<bool(const std::string& path)>;
/// The probe of a file system that FileReader alone describes (the tests' fakes).
inline bool assumeFileExists(const std::string&) { return true; }

/// What this process may do with the file at a path (which executable a PATH lookup finds).
struct FileAccess {
  bool exists = false;      ///< something is there
  bool readable = false;    ///< this process may read it
  bool executable = false;  ///< a regular file this process may execute
};
using FileAccessProbe = std::function<FileAccess(const std::string& path)>;

}  // namespace pltrun
