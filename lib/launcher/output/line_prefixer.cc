#include "launcher/output/line_prefixer.h"

#include <cstring>

namespace pltrun {
namespace {

// Finds line terminators ('\n' or '\r') with memchr, which is much faster than a byte
// loop (output throughput through the launcher is a stated goal). The next newline is
// remembered, so text made of many '\r' segments is still scanned once, not once per
// segment.
class TerminatorFinder {
 public:
  explicit TerminatorFinder(std::string_view text) : text_(text) {}

  /// The next '\n' or '\r' at or after `from`, or npos.
  size_t next(size_t from) {
    if (newline_ != std::string_view::npos && newline_ < from) newline_ = find('\n', from, text_.size());
    if (newline_ == kUnknown) newline_ = find('\n', from, text_.size());
    size_t limit = newline_ == std::string_view::npos ? text_.size() : newline_;
    size_t carriage = find('\r', from, limit);
    return carriage != std::string_view::npos ? carriage : newline_;
  }

 private:
  static constexpr size_t kUnknown = std::string_view::npos - 1;

  size_t find(char wanted, size_t from, size_t limit) const {
    if (from >= limit) return std::string_view::npos;
    const void* found = std::memchr(text_.data() + from, wanted, limit - from);
    return found ? static_cast<const char*>(found) - text_.data() : std::string_view::npos;
  }

  std::string_view text_;
  size_t newline_ = kUnknown;
};

}  // namespace

void LinePrefixer::emitSegment(std::string_view segment, char terminator, std::string& out) {
  // A redraw of exactly the frame already previewed adds nothing new on the console.
  if (terminator == '\r' && segment.empty() && previewed_ > 0 && previewed_ == pending_.size()) {
    pending_.clear();
    previewed_ = 0;
    return;
  }
  previewed_ = 0;
  if (segment.empty() && pending_.empty()) {
    // "\r\n" (or a progress bar closed by a bare newline) ends the line already drawn
    // (in a file, already ended).
    if (terminator == '\n' && afterCarriageReturn_) {
      if (terminal_) out += '\n';
      afterCarriageReturn_ = false;
      return;
    }
    // A bare '\r' before a redraw needs no prefix of its own, and in a file nothing.
    if (terminator == '\r') {
      if (terminal_) out += '\r';
      afterCarriageReturn_ = true;
      return;
    }
  }
  out += prefix_;
  if (!pending_.empty()) {
    out += pending_;
    pending_.clear();
  }
  out.append(segment.data(), segment.size());
  out += terminal_ ? terminator : '\n';
  afterCarriageReturn_ = terminator == '\r';
}

void LinePrefixer::feed(std::string_view chunk, std::string& out) {
  TerminatorFinder terminators(chunk);
  size_t start = 0;
  while (start < chunk.size()) {
    size_t stop = terminators.next(start);
    if (stop == std::string_view::npos) {
      pending_.append(chunk.data() + start, chunk.size() - start);
      // A "line" that never ends (binary output, a huge JSON dump) must not grow the
      // launcher's memory: past the limit it is written out as a line of its own.
      if (pending_.size() >= kMaxLine) emitSegment({}, '\n', out);
      return;
    }
    emitSegment(chunk.substr(start, stop - start), chunk[stop], out);
    start = stop + 1;
  }
}

void LinePrefixer::previewProgress(std::string& out) {
  if (!terminal_ || !afterCarriageReturn_ || pending_.empty() || previewed_ == pending_.size()) return;
  previewed_ = pending_.size();
  out += prefix_;
  out += pending_;
  out += '\r';
}

void LinePrefixer::finish(std::string& out) {
  if (!pending_.empty()) {
    emitSegment({}, '\n', out);
  } else if (afterCarriageReturn_) {
    // Keep the last progress-bar frame instead of letting the next line overwrite it.
    if (terminal_) out += '\n';
    afterCarriageReturn_ = false;
  }
}

}  // namespace pltrun
