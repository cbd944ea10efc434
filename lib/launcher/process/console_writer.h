#pragma once
// The launcher's stdout and stderr. Writes are whole (a prefixed line is never split
// between two writers) and blocking, so a slow console slows the workers down instead of
// losing their output.

#include <string>

namespace pltrun {

class ConsoleWriter {
 public:
  /// Writes all of `text` to fd 1 (`toStderr` false) or fd 2. If the reader has gone away
  /// (EPIPE), console output stops quietly; log files still get everything.
  void write(const std::string& text, bool toStderr);

 private:
  bool closed_[2] = {false, false};
};

/// Writes all of `data` to `fd`, retrying short writes and EINTR. False on any other error.
bool writeAll(int fd, const char* data, size_t size);

}  // namespace pltrun
