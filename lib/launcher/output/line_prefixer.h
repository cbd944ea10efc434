#pragma once
// Turns a worker's raw output into console text: every line gets the worker's prefix, and
// a line is only ever written whole, so output of many workers never interleaves inside a
// line. On a terminal, carriage returns end a segment too, so progress bars redraw in
// place, and an unfinished progress-bar segment can be previewed at once so the bar stays
// live. In a file or pipe there is nothing to redraw: each carriage-return segment becomes
// a line of its own, so another worker's line never follows a bare '\r'.

#include <string>
#include <string_view>

namespace pltrun {

class LinePrefixer {
 public:
  /// Longest line held back waiting for its end; a longer one is split there (the log
  /// files keep the bytes exactly as written).
  static constexpr size_t kMaxLine = 64 * 1024;

  /// `prefix` is written before every line, e.g. "[rank 3] "; empty for none. `terminal`:
  /// the text goes to a terminal (carriage returns kept) rather than a file or pipe.
  explicit LinePrefixer(std::string prefix, bool terminal = true) : prefix_(std::move(prefix)), terminal_(terminal) {}
  const std::string& prefix() const { return prefix_; }

  /// Appends to `out` every line or carriage-return segment that `chunk` completes.
  void feed(std::string_view chunk, std::string& out);

  /// Appends the unfinished segment of a progress bar (text after a '\r'), ended by '\r' so
  /// the next draw overwrites it. Appends nothing for an ordinary unfinished line, nor
  /// anywhere but on a terminal.
  void previewProgress(std::string& out);

  /// End of stream: appends the unfinished line, if any, with a newline.
  void finish(std::string& out);

 private:
  void emitSegment(std::string_view segment, char terminator, std::string& out);

  std::string prefix_;
  bool terminal_;
  std::string pending_;  ///< start of a line whose end has not arrived yet
  bool afterCarriageReturn_ = false;
  size_t previewed_ = 0;  ///< bytes of pending_ already shown by previewProgress
};

}  // namespace pltrun
