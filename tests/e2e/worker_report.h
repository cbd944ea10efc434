#pragma once
// The reports of tests/e2e/worker_properties.py, read and compared: a worker forked from
// pltrun's zygote (--preload) against a cold-started one, property by property. Values that
// name one run (its out directory, pltrun's pid, the run directory) are replaced by
// placeholders first, so that what remains differs only where the workers do.

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "helpers/child_process.h"

namespace pltrun::test {

/// The report rank `rank` wrote in attempt `attempt` under `directory`; null when missing.
inline nlohmann::json workerReport(const std::string& directory, int rank, int attempt = 0) {
  const std::string text =
      readFile(directory + "/rank" + std::to_string(rank) + ".attempt" + std::to_string(attempt) + ".json");
  return text.empty() ? nlohmann::json() : nlohmann::json::parse(text);
}

/// `text` with every `from` replaced by `to`.
inline std::string replacedAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

/// `text` with the random part of each pltrun run directory ("pltrun-run-XXXXXX") replaced.
/// (No std::regex: it recurses per character and overflows the stack on long values.)
inline std::string withoutRunDirectories(std::string text) {
  const std::string stem = "pltrun-run-";
  for (size_t at = 0; (at = text.find(stem, at)) != std::string::npos;) {
    size_t end = at + stem.size();
    while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end]))) ++end;
    text.replace(at, end - at, "RUN_DIRECTORY");
    at += std::string("RUN_DIRECTORY").size();
  }
  return text;
}

/// Every string in `report` with the run's own names replaced: `outDirectory` by OUT,
/// pltrun's pid in /proc/PID paths by PLTRUN, pltrun's run directory by RUN_DIRECTORY.
inline nlohmann::json withoutRunNames(nlohmann::json report, const std::string& outDirectory, pid_t pltrun) {
  if (report.is_string()) {
    const std::string text = replacedAll(report.get<std::string>(), outDirectory, "OUT");
    return replacedAll(withoutRunDirectories(text), "/proc/" + std::to_string(pltrun) + "/", "/proc/PLTRUN/");
  }
  if (!report.is_structured()) return report;  // items() of a number is the number itself
  for (auto& item : report.items()) item.value() = withoutRunNames(item.value(), outDirectory, pltrun);
  return report;
}

/// True when `path` (a JSON pointer) is one of `prefixes` or lies under one.
inline bool underAny(const std::string& path, const std::set<std::string>& prefixes) {
  for (const std::string& prefix : prefixes) {
    if (path == prefix || path.rfind(prefix + "/", 0) == 0) return true;
  }
  return false;
}

/// "PATH: cold X, forked Y" for every leaf where the two reports differ, except under the
/// paths (JSON pointers, e.g. "/process/pid") in `ignored`.
inline std::vector<std::string> reportDifferences(const nlohmann::json& cold, const nlohmann::json& forked,
                                                  const std::set<std::string>& ignored) {
  std::vector<std::string> differences;
  const nlohmann::json coldLeaves = cold.flatten();
  const nlohmann::json forkedLeaves = forked.flatten();
  std::set<std::string> paths;
  for (const auto& item : coldLeaves.items()) paths.insert(item.key());
  for (const auto& item : forkedLeaves.items()) paths.insert(item.key());
  for (const std::string& path : paths) {
    if (underAny(path, ignored)) continue;
    const nlohmann::json coldValue = coldLeaves.value(path, nlohmann::json("(absent)"));
    const nlohmann::json forkedValue = forkedLeaves.value(path, nlohmann::json("(absent)"));
    if (coldValue != forkedValue) {
      differences.push_back(path + ": cold " + coldValue.dump() + ", forked " + forkedValue.dump());
    }
  }
  return differences;
}

}  // namespace pltrun::test
