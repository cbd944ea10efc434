#include "rendezvous/elastic/expected_nodes.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <nlohmann/json.hpp>

namespace pltrun::rdzv {

namespace {

// "GPU-07.cluster.local" -> "gpu-07": host names compare without case, as DNS does. An
// address keeps its dots: 10.0.0.7 is not "10".
std::string shortName(const std::string& name) {
  const bool numeric = name.find_first_not_of("0123456789.") == std::string::npos;
  const bool ipv6 = name.find(':') != std::string::npos;
  std::string result = numeric || ipv6 ? name : name.substr(0, name.find('.'));
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return result;
}

bool exactMatch(const std::string& expected, const NodeDescriptor& node) {
  return expected == node.name || expected == node.host || expected == node.addr;
}

// By the short form of its given name or of its host name (a Slurm node whose host name
// differs from its Slurm name answers to both).
bool shortMatch(const std::string& expected, const NodeDescriptor& node) {
  const std::string wanted = shortName(expected);
  return wanted == shortName(node.host) || (!node.name.empty() && wanted == shortName(node.name));
}

}  // namespace

std::vector<std::string> missingNodes(const std::vector<std::string>& expected,
                                      const std::vector<NodeDescriptor>& joined) {
  std::vector<bool> accounted(expected.size(), false);
  std::vector<bool> used(joined.size(), false);
  auto pair = [&](const std::function<bool(const std::string&, const NodeDescriptor&)>& matches) {
    for (size_t node = 0; node < joined.size(); ++node) {
      for (size_t entry = 0; entry < expected.size() && !used[node]; ++entry) {
        if (accounted[entry] || !matches(expected[entry], joined[node])) continue;
        accounted[entry] = true;
        used[node] = true;
      }
    }
  };
  pair(exactMatch);
  pair(shortMatch);
  std::vector<std::string> missing;
  for (size_t entry = 0; entry < expected.size(); ++entry) {
    if (!accounted[entry]) missing.push_back(expected[entry]);
  }
  return missing;
}

std::string nodeNamesText(const std::vector<std::string>& names, size_t shown) {
  std::string text;
  for (size_t index = 0; index < names.size() && index < shown; ++index) {
    text += (index == 0 ? "" : ", ") + names[index];
  }
  if (names.size() > shown) text += " and " + std::to_string(names.size() - shown) + " more";
  return text;
}

std::string nodeNamesJson(const std::vector<std::string>& names) { return nlohmann::json(names).dump(); }

std::optional<std::vector<std::string>> nodeNamesFromJson(const std::string& text) {
  const nlohmann::json names = nlohmann::json::parse(text, nullptr, false);
  if (!names.is_array()) return std::nullopt;
  std::vector<std::string> result;
  for (const nlohmann::json& name : names) {
    if (name.is_string()) result.push_back(name.get<std::string>());
  }
  return result;
}

}  // namespace pltrun::rdzv
