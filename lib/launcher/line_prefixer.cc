#include "launcher/line_prefixer.h"

#include <cstring>

namespace pltrun {
namespace {

// The next '\n' or '\r' at or after `from`, or npos. memchr is much faster than a byte
// loop, and output throughput through the launcher is a stated goal.
size_t findTerminator(std::string_view text, size_t from) {
  const char* begin = text.data() + from;
  size_t length = text.size() - from;
  const void* newline = std::memchr(begin, '\n', length);
  size_t limit = newline ? static_cast<const char*>(newline) - begin : length;
  const void* carriage = std::memchr(begin, '\r', limit);
  if (carriage) return from + (static_cast<const char*>(carriage) - begin);
  return newline ? from + limit : std::string_view::npos;
}

}  // namespace

void LinePrefixer::emitSegment(std::string_view segment, char terminator, std::string& out) {
  // "\r\n" (or a progress bar closed by a bare newline) ends the line already drawn.
  if (terminator == '\n' && segment.empty() && pending_.empty() && afterCarriageReturn_) {
    out += '\n';
    afterCarriageReturn_ = false;
    return;
  }
  out += prefix_;
  if (!pending_.empty()) {
    out += pending_;
    pending_.clear();
  }
  out.append(segment.data(), segment.size());
  out += terminator;
  afterCarriageReturn_ = terminator == '\r';
}

void LinePrefixer::feed(std::string_view chunk, std::string& out) {
  size_t start = 0;
  while (start < chunk.size()) {
    size_t stop = findTerminator(chunk, start);
    if (stop == std::string_view::npos) {
      pending_.append(chunk.data() + start, chunk.size() - start);
      return;
    }
    emitSegment(chunk.substr(start, stop - start), chunk[stop], out);
    start = stop + 1;
  }
}

void LinePrefixer::previewProgress(std::string& out) const {
  if (!afterCarriageReturn_ || pending_.empty()) return;
  out += prefix_;
  out += pending_;
  out += '\r';
}

void LinePrefixer::finish(std::string& out) {
  if (pending_.empty()) return;
  emitSegment({}, '\n', out);
}

}  // namespace pltrun
