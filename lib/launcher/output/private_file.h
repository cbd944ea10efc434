#pragma once
// Files pltrun writes and reads in places others may reach (a shared --log-dir with run ids
// anyone can guess, a worker's error file): never through a symbolic link, never someone
// else's file, never blocking on a FIFO, never unbounded. The ...At forms take a name in an
// open directory (openat): what another user renames or plants where that directory was
// found changes nothing for them (run_directory.h).

#include <fcntl.h>

#include <cstddef>
#include <optional>
#include <string>

namespace pltrun {

enum class WriteMode { Truncate, Append };

/// Opens `path` for writing (mode 0600 when created) without following a symbolic link at
/// its end; refuses what is not a regular file of this user. Returns the descriptor
/// (O_CLOEXEC); throws Error(System) with one line saying why not.
int openPrivateFile(const std::string& path, WriteMode mode);
/// openPrivateFile of `name` in the open directory `directoryFd`; `shown` names it in
/// messages.
int openPrivateFileAt(int directoryFd, const std::string& name, WriteMode mode, const std::string& shown);

/// Writes `text` to `path` as openPrivateFile does; false (errno set) when it could not.
bool writePrivateFile(const std::string& path, const std::string& text);
/// Writes `text` to the descriptor `fd` and closes it; false (errno set) when it could not.
bool writeAndClose(int fd, const std::string& text);

/// Creates `path` and its missing parents; the ones it creates get mode 0700. Refuses an
/// existing `path` that is a symbolic link or not this user's directory. Throws Error(System).
void createPrivateDirectories(const std::string& path);
/// The directory `name` in the open directory `directoryFd`, created (0700) when missing,
/// opened without following a symbolic link, refused when not this user's, made 0700 when
/// it is wider. Returns its descriptor (O_CLOEXEC); throws Error(System) naming `shown`.
int openPrivateDirectoryAt(int directoryFd, const std::string& name, const std::string& shown);

/// At most `limit` bytes of the regular file `path`, opened without following a symbolic
/// link and without blocking (a FIFO is refused, not waited on); empty when it is missing,
/// not a regular file, or larger than `limit`.
std::optional<std::string> readRegularFile(const std::string& path, size_t limit);
/// readRegularFile of `name` in the open directory `directoryFd`.
std::optional<std::string> readRegularFileAt(int directoryFd, const std::string& name, size_t limit);

}  // namespace pltrun
