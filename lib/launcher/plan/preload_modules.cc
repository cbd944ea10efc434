#include "launcher/plan/preload_modules.h"

#include <cctype>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

// An identifier as far as pltrun can tell without Python (non-ASCII letters are let through).
bool isIdentifier(std::string_view part) {
  if (part.empty() || std::isdigit(static_cast<unsigned char>(part.front()))) return false;
  for (char character : part) {
    const auto byte = static_cast<unsigned char>(character);
    if (!std::isalnum(byte) && character != '_' && byte < 0x80) return false;  // UTF-8 letters pass
  }
  return true;
}

bool isModuleName(std::string_view name) {
  for (std::string_view part : splitText(name, '.')) {
    if (!isIdentifier(part)) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> parsePreloadModules(std::string_view text) {
  std::vector<std::string> modules;
  for (std::string_view entry : splitText(text, ',')) {
    const std::string_view name = trimSpaces(entry);
    if (!isModuleName(name)) {
      throw Error(ErrorCode::InvalidArgument,
                  "--preload '" + std::string(text) + "': '" + std::string(name) +
                      "' is not a Python module name; give modules separated by commas, e.g. torch,numpy");
    }
    modules.emplace_back(name);
  }
  return modules;
}

}  // namespace pltrun
