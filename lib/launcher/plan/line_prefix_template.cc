#include "launcher/plan/line_prefix_template.h"

#include <cctype>

namespace pltrun {
namespace {

bool startsIdentifier(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool continuesIdentifier(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string expandLinePrefixTemplate(const std::string& text, const std::string& roleName, int rank, int localRank) {
  const auto valueOf = [&](const std::string& name, std::string& value) {
    if (name == "role_name")
      value = roleName;
    else if (name == "rank")
      value = std::to_string(rank);
    else if (name == "local_rank")
      value = std::to_string(localRank);
    else
      return false;
    return true;
  };
  std::string out;
  for (size_t at = 0; at < text.size();) {
    if (text[at] != '$' || at + 1 == text.size()) {
      out += text[at++];
      continue;
    }
    if (text[at + 1] == '$') {  // $$ is one $
      out += '$';
      at += 2;
      continue;
    }
    const bool braced = text[at + 1] == '{';
    const size_t start = at + (braced ? 2 : 1);
    size_t end = start;
    if (end < text.size() && startsIdentifier(text[end])) {
      while (end < text.size() && continuesIdentifier(text[end])) ++end;
    }
    const bool closed = !braced || (end < text.size() && text[end] == '}');
    std::string value;
    if (end > start && closed && valueOf(text.substr(start, end - start), value)) {
      out += value;
      at = end + (braced ? 1 : 0);
    } else {
      out += text[at++];  // not a placeholder it knows: left as written
    }
  }
  return out;
}

}  // namespace pltrun
