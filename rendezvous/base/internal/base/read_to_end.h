#pragma once
// Reading a descriptor to its end, with a bound: the files pltrun reads for others' sake (a
// worker's error file, a secret file, a hostfile or env file) are read through an open
// descriptor, which is the file that was checked, and never past what such a file can hold.

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>

namespace pltrun {

struct ReadToEnd {
  std::string content;     ///< what was read (up to the limit)
  int error = 0;           ///< errno of a read that failed; 0 when none did
  bool overLimit = false;  ///< the descriptor held more than the limit
  bool complete() const { return error == 0 && !overLimit; }
};

/// Reads `fd` to its end (EINTR retried), stopping at the first read that fails or that
/// would take the content past `limit` bytes.
inline ReadToEnd readToEnd(int fd, size_t limit) {
  ReadToEnd read;
  char chunk[16 * 1024];
  for (ssize_t got; (got = ::read(fd, chunk, sizeof chunk)) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      read.error = errno;
      break;
    }
    if (read.content.size() + static_cast<size_t>(got) > limit) {
      read.overLimit = true;
      break;
    }
    read.content.append(chunk, static_cast<size_t>(got));
  }
  return read;
}

}  // namespace pltrun
