#pragma once
// What a worker wrote to TORCHELASTIC_ERROR_FILE (torch's `@record`): read with bounds, since
// the worker controls the file (its kind, its size, its nesting). Pure, for the unit tests
// and the fuzzer; readErrorFile (failure_report.h) reads the file.

#include <cstddef>
#include <optional>
#include <string>

namespace pltrun {

struct RecordedError {
  std::string message;
  std::string traceback;
  std::string timestamp;  ///< epoch seconds, as torch writes it
};

/// The most of a worker's error file pltrun reads: a traceback is kilobytes.
constexpr size_t kErrorFileLimit = 1024 * 1024;

/// torch's error-file format, {"message": {"message": ..., "extraInfo": {"py_callstack": ...,
/// "timestamp": ...}}}, or {"message": "text"}; none for anything else. A non-string value
/// is shown as JSON, or named when nested deeper than 64 levels (never dumped: that
/// recursion could overflow the stack).
std::optional<RecordedError> parseErrorFile(const std::string& text);

}  // namespace pltrun
