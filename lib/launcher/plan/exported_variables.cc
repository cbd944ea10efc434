#include "launcher/plan/exported_variables.h"

#include <sstream>

#include "launcher/plan/file_reader.h"
#include "launcher/plan/shell_words.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

void requireVariableName(const std::string& name, const std::string& where) {
  if (isVariableName(name)) return;
  throw Error(ErrorCode::InvalidArgument,
              where + ": '" + name + "' is not a variable name (a letter or _, then letters, digits or _)");
}

// An env file's value as a shell reads one word: 'single' and "double" quoted parts and
// backslash escapes, joined ('it'\''s' is it's); a value without quotes or backslashes as
// it is written (spaces included). No $ expansion. What follows unquoted blanks must be a
// comment.
std::string unquotedValue(std::string_view value, const std::string& where) {
  if (value.find_first_of("'\"\\") == std::string_view::npos) return std::string(value);
  std::string text;
  for (size_t at = 0; at < value.size();) {
    const char next = value[at];
    if (next == '\'') {
      const size_t close = value.find('\'', at + 1);
      if (close == std::string_view::npos) {
        throw Error(ErrorCode::InvalidArgument,
                    where + ": the value's ' quote is not closed on its line (one line per variable)");
      }
      text += value.substr(at + 1, close - at - 1);
      at = close + 1;
    } else if (next == '"') {
      ++at;
      if (!appendDoubleQuoted(value, at, text)) {  // a backslash keeps only " \ $ ` (no expansion)
        throw Error(ErrorCode::InvalidArgument,
                    where + ": the value's \" quote is not closed on its line (one line per variable)");
      }
    } else if (next == '\\') {
      if (at + 1 == value.size()) throw Error(ErrorCode::InvalidArgument, where + ": the value ends in a backslash");
      text += value[at + 1];
      at += 2;
    } else if (next == ' ' || next == '\t') {
      const std::string_view rest = trimSpaces(value.substr(at));
      if (!rest.empty() && rest.front() != '#') {
        throw Error(ErrorCode::InvalidArgument, where + ": unquoted blanks in the value; quote all of it");
      }
      break;
    } else {
      text += next;
      ++at;
    }
  }
  return text;
}

}  // namespace

void readEnvFile(std::istream& file, const std::string& path, Environment& variables) {
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find('\0') != std::string::npos) {
      throw Error(ErrorCode::InvalidArgument,
                  path + ":" + std::to_string(number) + ": a NUL byte, which no environment variable can hold");
    }
    std::string_view text = trimSpaces(line);
    if (text.empty() || text.front() == '#') continue;
    if (text.rfind("export ", 0) == 0) text = trimSpaces(text.substr(7));
    const size_t equals = text.find('=');
    std::string name(trimSpaces(text.substr(0, equals == std::string_view::npos ? 0 : equals)));
    const std::string where = path + ":" + std::to_string(number);
    if (equals == std::string_view::npos || name.empty() || name.find_first_of(" \t") != std::string::npos) {
      throw Error(ErrorCode::InvalidArgument, where + ": expected KEY=VALUE, got '" + std::string(text) + "'");
    }
    requireVariableName(name, where);
    variables[name] = unquotedValue(text.substr(equals + 1), where);
  }
}

std::optional<std::string> readEnvFileAt(const std::string& path, const std::string& what, bool required,
                                         const FileReader& readOwnFile, Environment& variables) {
  std::string content;
  try {
    content = readOwnFile(path);
  } catch (const FileReadError& error) {
    const FileReadError::Reason reason = error.reason();
    if (reason == FileReadError::Reason::OthersControl) {
      throw Error(ErrorCode::InvalidArgument, othersFileRefusal(what, path, error));
    }
    if (!required && (reason == FileReadError::Reason::Missing || reason == FileReadError::Reason::IsDirectory)) {
      return std::nullopt;
    }
    const std::string why = reason == FileReadError::Reason::IsDirectory ? "is a directory" : error.what();
    throw Error(ErrorCode::InvalidArgument, what + " " + shownPath(path) + ": cannot be read: " + why);
  }
  Environment read;
  std::istringstream lines(content);
  readEnvFile(lines, path, read);
  for (auto& [name, value] : read) variables[name] = std::move(value);
  return "read " + countedNoun(static_cast<long long>(read.size()), "variable") + " from " + what + " " +
         shownPath(path);
}

std::optional<std::string> addExportedVariables(const Environment& inherited, const std::vector<std::string>& exports,
                                                const std::optional<std::string>& envFile,
                                                const FileReader& readOwnFile, Environment& into) {
  for (const std::string& item : exports) {
    const size_t equals = item.find('=');
    requireVariableName(item.substr(0, equals), "-x " + item);
    if (equals != std::string::npos) {
      into[item.substr(0, equals)] = item.substr(equals + 1);
      continue;
    }
    auto found = inherited.find(item);
    if (found == inherited.end()) {
      throw Error(ErrorCode::InvalidArgument, "-x " + item + ": not set here; set it, or give -x " + item + "=VALUE");
    }
    into[item] = found->second;
  }
  if (!envFile) return std::nullopt;
  return readEnvFileAt(*envFile, "--env-file", true, readOwnFile, into);
}

}  // namespace pltrun
