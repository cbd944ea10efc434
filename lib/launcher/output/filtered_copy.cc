#include "launcher/output/filtered_copy.h"

#include <unistd.h>

#include <algorithm>

#include "launcher/output/console_writer.h"

namespace pltrun {

FilteredCopy::FilteredCopy(const RunFile& file, std::vector<std::string> filters)
    : filters_(std::move(filters)), fd_(file.open(WriteMode::Truncate)) {}

FilteredCopy::~FilteredCopy() {
  if (fd_ >= 0) close(fd_);
}

bool FilteredCopy::matches(std::string_view line) const {
  return std::any_of(filters_.begin(), filters_.end(),
                     [line](const std::string& filter) { return line.find(filter) != std::string_view::npos; });
}

void FilteredCopy::writeMatching(std::string_view lines) {
  size_t start = 0;
  while (fd_ >= 0 && start < lines.size()) {
    size_t end = lines.find_first_of("\r\n", start);
    end = end == std::string_view::npos ? lines.size() : end + 1;
    const std::string_view line = lines.substr(start, end - start);
    if (matches(line) && !writeAll(fd_, line.data(), line.size())) {
      close(fd_);  // a full disk: the copy stops, the job and its real logs go on
      fd_ = -1;
    }
    start = end;
  }
}

void FilteredLines::feed(std::string_view chunk) {
  lines_.clear();
  prefixer_.feed(chunk, lines_);
  copy_->writeMatching(lines_);
}

void FilteredLines::finish() {
  lines_.clear();
  prefixer_.finish(lines_);
  copy_->writeMatching(lines_);
}

}  // namespace pltrun
