#pragma once
// The benchmarks' command lines, read the same way: "--flag value" or "--flag=value",
// -h/--help, and a one-line error (exit 2) for anything else.

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace bench {

constexpr int kUsageErrorStatus = 2;

[[noreturn]] inline void usageError(const char* program, const std::string& message) {
  std::fprintf(stderr, "%s: error: %s (see %s --help)\n", program, message.c_str(), program);
  std::exit(kUsageErrorStatus);
}

/// `text` as an integer in [low, high]; anything else is a usage error naming `flag`.
inline long parseInteger(const char* program, const std::string& flag, const std::string& text, long low, long high) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < low || value > high) {
    usageError(program, flag + " wants an integer from " + std::to_string(low) + " to " + std::to_string(high) +
                            ", not '" + text + "'");
  }
  return value;
}

/// Calls onItem(item) for each comma-separated item of `value`, empty ones included (so
/// that "1,,2" reaches the caller's check as an empty item).
template <typename OnItem>
void forEachCommaItem(const std::string& value, OnItem onItem) {
  for (size_t start = 0; start <= value.size();) {
    const size_t comma = std::min(value.find(',', start), value.size());
    onItem(value.substr(start, comma - start));
    start = comma + 1;
  }
}

/// Calls onFlag(flag, value) for every flag in order; prints `help` and exits on --help.
template <typename OnFlag>
void forEachFlag(int argc, char** argv, const char* program, const char* help, OnFlag onFlag) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::fputs(help, stdout);
      std::exit(0);
    }
    std::string value;
    auto equals = flag.find('=');
    if (flag.rfind("--", 0) == 0 && equals != std::string::npos) {
      value = flag.substr(equals + 1);
      flag = flag.substr(0, equals);
    } else {
      if (flag.rfind("--", 0) != 0) usageError(program, "unexpected argument '" + flag + "'");
      if (i + 1 >= argc) usageError(program, flag + " needs a value");
      value = argv[++i];
    }
    onFlag(flag, value);
  }
}

}  // namespace bench
