#include "launcher/command_line/site_config_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <utility>

#include "launcher/command_line/rendezvous_flags.h"
#include "launcher/command_line/toml_key_depth.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

// More dots outside strings than a site file has (its keys are top level; a float or a time
// has one), and few enough levels for the parser to build and free (toml_key_depth.h).
constexpr size_t kMostDots = 256;

constexpr const char* kSectionsAdvice =
    "sections are not read; write the options at the top level (rdzv-conf alone may be a table: "
    "[rdzv-conf] with join_timeout = 900 under it is rdzv-conf = \"join_timeout=900\")";

std::string placeOf(const std::string& path, const toml::source_position& position) {
  return path + ":" + std::to_string(position.line) + ":" + std::to_string(position.column);
}

// The line and column of `offset`, counted as toml++ counts them (columns in characters).
toml::source_position positionOf(std::string_view text, size_t offset) {
  toml::source_position position{1, 1};
  for (size_t at = 0; at < offset; ++at) {
    if (text[at] == '\n') {
      ++position.line;
      position.column = 1;
    } else if ((static_cast<unsigned char>(text[at]) & 0xC0) != 0x80) {  // not a UTF-8 continuation
      ++position.column;
    }
  }
  return position;
}

void refuseDeepKeys(std::string_view text, const std::string& path) {
  const std::optional<size_t> offset = dotPastLimit(text, kMostDots);
  if (!offset) return;
  throwSiteConfigError(
      placeOf(path, positionOf(text, *offset)),
      "more than " + std::to_string(kMostDots) + " dots outside strings (keys nested that deep): " + kSectionsAdvice);
}

// The key on `where`'s line when the parser's error is in its value ("role = \"x"): the
// bare or dotted key before the '=', so that the error can name it; empty elsewhere.
std::string keyBefore(std::string_view text, const toml::source_position& where) {
  size_t start = 0;
  for (toml::source_index line = 1; line < where.line && start != std::string_view::npos; ++line) {
    start = text.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  if (start == std::string_view::npos) return "";
  const std::string_view line = text.substr(start, text.find('\n', start) - start);
  const size_t equals = line.find('=');
  if (equals == std::string_view::npos || where.column <= equals + 1) return "";
  const std::string_view key = trimSpaces(line.substr(0, equals));
  const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
  return bare ? std::string(key) : "";
}

// What to do about the parser's complaint, for the ones a site file meets.
std::string adviceFor(std::string_view description) {
  const auto says = [&](std::string_view words) { return description.find(words) != std::string_view::npos; };
  if (says("cannot redefine")) return "each key is given once: remove one of them";
  if (says("escape sequence"))
    return "in \"...\" a backslash starts an escape (\\\\ is one backslash); '...' takes it as written";
  if (says("parsing string") || says("parsing literal string")) {
    return "a string ends on its line with the quote that opened it (\"\"\" or ''' for one over several lines)";
  }
  return "see https://toml.io/en/v1.0.0 for how TOML writes it";
}

toml::table parseToml(const std::string& text, const std::string& path) {
  try {
    return toml::parse(std::string_view(text));
  } catch (const toml::parse_error& error) {
    const toml::source_position where = error.source().begin;
    const std::string key = keyBefore(text, where);
    std::string description(error.description());
    std::replace_if(
        description.begin(), description.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    if (!description.empty()) description.front() = static_cast<char>(std::tolower(description.front()));
    // The file is what is not TOML, not the key: "not valid TOML at 'KEY': ...".
    throwSiteConfigError(placeOf(path, where), "not valid TOML" + (key.empty() ? "" : " at '" + key + "'") + ": " +
                                                   description + "; " + adviceFor(description));
  }
}

// The entries of `table` as written: toml++ keeps them sorted by name.
std::vector<std::pair<const toml::key*, const toml::node*>> inFileOrder(const toml::table& table) {
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (const auto& [key, node] : table) entries.emplace_back(&key, &node);
  std::sort(entries.begin(), entries.end(), [](const auto& left, const auto& right) {
    const toml::source_position& a = left.first->source().begin;
    const toml::source_position& b = right.first->source().begin;
    return std::make_pair(a.line, a.column) < std::make_pair(b.line, b.column);
  });
  return entries;
}

[[noreturn]] void refuseValue(const std::string& path, const toml::node& node, const std::string& key,
                              const std::string& why) {
  throwSiteConfigError(placeOf(path, node.source().begin), "'" + key + "': " + why);
}

std::string numberText(double number) {
  // The shortest text that reads back as the same double (0.1, 3, 1000000, 1e+20), by fmt:
  // libstdc++ has no floating-point std::to_chars before g++ 11 (the wheel builds with
  // g++ 10), which also wrote 1000000 as 1e+06, text an integer option would refuse.
  return fmt::format("{}", number);
}

// A string, number or boolean as the text an option takes; a date, a table or an array
// inside an array is no option's value.
std::string scalarText(const std::string& path, const std::string& key, const toml::node& node) {
  if (const auto* text = node.as_string()) {
    // "\u0000" is valid TOML, but no path, name or argument can hold a NUL: C would cut the
    // value there, and the error about what is left would name nothing.
    if (text->get().find('\0') != std::string::npos) {
      refuseValue(path, node, key,
                  "a NUL character (\\u0000) is in the string, and no option's value can hold one; "
                  "remove it");
    }
    return text->get();
  }
  if (const auto* integer = node.as_integer()) return std::to_string(integer->get());
  if (const auto* number = node.as_floating_point()) return numberText(number->get());
  if (const auto* flag = node.as_boolean()) return flag->get() ? "true" : "false";
  if (node.is_array()) refuseValue(path, node, key, "an array inside an array is no option's value; write one list");
  if (node.is_table()) refuseValue(path, node, key, std::string("a table is no option's value: ") + kSectionsAdvice);
  refuseValue(path, node, key, "a date or time is no option's value; write it as a string (\"...\")");
}

// One value, or one per element of an array (at least one).
std::vector<std::string> valuesOf(const std::string& path, const std::string& key, const toml::node& node) {
  const toml::array* list = node.as_array();
  if (list == nullptr) return {scalarText(path, key, node)};
  if (list->empty()) refuseValue(path, node, key, "an empty array is no option's value; leave the key out");
  std::vector<std::string> values;
  for (const toml::node& element : *list) values.push_back(scalarText(path, key, element));
  return values;
}

// [rdzv-conf]'s keys as --rdzv-conf's pairs: join_timeout = 900 is "join_timeout=900", an
// array the comma list that expected_hosts takes.
std::string rendezvousPairs(const std::string& path, const std::string& key, const toml::table& table) {
  std::vector<std::string> pairs;
  for (const auto& [name, node] : inFileOrder(table)) {
    const std::string pairKey(name->str());
    pairs.push_back(rendezvousConfPair(pairKey, joinText(valuesOf(path, key + "." + pairKey, *node), ",")));
  }
  return joinText(pairs, ",");
}

SiteEntry entryOf(const std::string& path, const toml::key& key, const toml::node& node) {
  SiteEntry entry{std::string(key.str()), {}, placeOf(path, key.source().begin), placeOf(path, node.source().begin)};
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    entry.values = valuesOf(path, entry.key, node);
    return entry;
  }
  std::string option = entry.key;
  std::replace(option.begin(), option.end(), '_', '-');
  if (option != "rdzv-conf") throwSiteConfigError(entry.keyPlace, "'" + entry.key + "': " + kSectionsAdvice);
  entry.values = {rendezvousPairs(path, entry.key, *table)};
  return entry;
}

}  // namespace

std::vector<SiteEntry> readSiteEntries(const std::string& text, const std::string& path) {
  refuseDeepKeys(text, path);
  const toml::table root = parseToml(text, path);
  std::vector<SiteEntry> entries;
  for (const auto& [key, node] : inFileOrder(root)) entries.push_back(entryOf(path, *key, *node));
  return entries;
}

void throwSiteConfigError(const std::string& place, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "site config " + place + ": " + why);
}

}  // namespace pltrun
