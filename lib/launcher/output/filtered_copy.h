#pragma once
// torchrun's --duplicate-stdout-filters / --duplicate-stderr-filters: one file per attempt
// and stream (DIR/RUN_ID/attempt_N/filtered_stdout.log, filtered_stderr.log) that gets,
// from every worker, each whole console line (with its prefix) containing any filter. The
// file is shared by the workers' streams; each stream splits its own lines (FilteredLines),
// so lines of different workers never mix.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/output/line_prefixer.h"
#include "launcher/output/run_directory.h"

namespace pltrun {

class FilteredCopy {
 public:
  /// Creates `file` as a private file (never following a link, never overwriting another
  /// user's); throws Error(System) when it cannot.
  FilteredCopy(const RunFile& file, std::vector<std::string> filters);
  ~FilteredCopy();
  FilteredCopy(const FilteredCopy&) = delete;
  FilteredCopy& operator=(const FilteredCopy&) = delete;

  /// Writes the lines of `lines` (whole lines, each ending in '\n' or '\r') that contain a
  /// filter. A write error (a full disk) stops the copy, not the job.
  void writeMatching(std::string_view lines);
  bool matches(std::string_view line) const;

 private:
  std::vector<std::string> filters_;
  int fd_ = -1;
};

/// One worker stream's way into a FilteredCopy.
class FilteredLines {
 public:
  FilteredLines(std::shared_ptr<FilteredCopy> copy, std::string prefix)
      : copy_(std::move(copy)), prefixer_(std::move(prefix), /*terminal=*/false) {}
  void feed(std::string_view chunk);
  /// End of stream: the unfinished last line too.
  void finish();

 private:
  std::shared_ptr<FilteredCopy> copy_;
  LinePrefixer prefixer_;
  std::string lines_;
};

}  // namespace pltrun
