#include "launcher/process/console_writer.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace pltrun {

bool writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {  // someone made the descriptor non-blocking: wait, do not drop
        pollfd writable{fd, POLLOUT, 0};
        poll(&writable, 1, -1);
        continue;
      }
      return false;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

void ConsoleWriter::write(const std::string& text, bool toStderr) {
  const int index = toStderr ? 1 : 0;
  if (text.empty() || closed_[index]) return;
  if (!writeAll(index + 1, text.data(), text.size())) closed_[index] = true;
}

}  // namespace pltrun
