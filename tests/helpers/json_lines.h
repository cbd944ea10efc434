#pragma once
// events.jsonl as the tests read it: one JSON object per line (docs/EVENTS.md).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "helpers/child_process.h"

namespace pltrun::test {

/// Every line of the file at `path`, parsed; empty when the file is missing or empty.
inline std::vector<nlohmann::json> readJsonLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  const std::string text = readFile(path);
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    lines.push_back(nlohmann::json::parse(text.substr(start, end - start)));
  }
  return lines;
}

}  // namespace pltrun::test
