#include "launcher/plan/host_list.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {

namespace {

constexpr int kMaxSlots = 4096;
constexpr const char* kHostsForm = "write host:slots,host:slots (e.g. h1:4,h2:4), host names alone, or [::1]:2";
constexpr const char* kHostfileForm = "write 'host', 'host slots=N' or 'host:N' per line";
constexpr const char* kSelectForm = "write host@host:0,2 (whole hosts, or slot indices after ':')";

bool isSpace(char c) { return c == ' ' || c == '\t'; }

// A host name with, when the text had one, what came after its ':' ("h1:4" -> "h1", "4";
// "[::1]:2" -> "::1", "2"). The problem is set, and the rest meaningless, when the text is malformed.
struct HostPart {
  std::string host;
  std::optional<std::string> suffix;
  std::string problem;
};

// A host name goes into ssh's argv and the remote shell's command line: letters, digits and
// . - _ only (and : % inside an IPv6 address's brackets), never a leading '-' that ssh
// would take for an option.
std::string hostProblem(const std::string& host) {
  if (host.empty()) return "empty host name";
  if (host.front() == '-') return "host name '" + host + "' starts with '-' (ssh would read it as an option)";
  for (char c : host) {
    if (isSpace(c) || c == '\r' || c == '\n') return "host name '" + host + "' has a space in it";
    if (!isNameCharacter(c) && c != ':' && c != '%')
      return "host name '" + host + "' has a '" + std::string(1, c) + "' in it";
  }
  return "";
}

HostPart splitHost(std::string_view text) {
  HostPart part;
  std::string_view rest;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) {
      part.problem = "'[' without ']'";
      return part;
    }
    part.host = std::string(text.substr(1, close - 1));
    rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') {
      part.problem = "'" + std::string(rest) + "' after ']' (only ':' and a number may follow)";
      return part;
    }
  } else {
    size_t colon = text.find(':');
    if (colon != std::string_view::npos && text.find(':', colon + 1) != std::string_view::npos) {
      part.problem = "more than one ':' (write IPv6 addresses in brackets: [::1]:2)";
      return part;
    }
    part.host = std::string(text.substr(0, colon == std::string_view::npos ? text.size() : colon));
    rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon);
  }
  if (!rest.empty()) part.suffix = std::string(rest.substr(1));
  part.problem = hostProblem(part.host);
  return part;
}

// Slots as text -> the number, or a problem.
std::optional<int> parseSlots(std::string_view text, std::string& problem) {
  auto number = parseInteger(trimSpaces(text));
  if (trimSpaces(text).empty()) {
    problem = "no slot count after ':' or '=' (give a number from 1 to " + std::to_string(kMaxSlots) + ")";
    return std::nullopt;
  }
  if (!number || *number < 1 || *number > kMaxSlots) {
    problem = "slots '" + std::string(text) + "' is not a number from 1 to " + std::to_string(kMaxSlots);
    return std::nullopt;
  }
  return static_cast<int>(*number);
}

// One "--hosts" item or hostfile first word -> host and slots (0 when not given), or a problem.
std::optional<HostSlots> parseHostItem(std::string_view text, std::string& problem) {
  HostPart part = splitHost(text);
  if (!part.problem.empty()) {
    problem = part.problem;
    return std::nullopt;
  }
  HostSlots entry;
  entry.host = part.host;
  if (part.suffix) {
    auto slots = parseSlots(*part.suffix, problem);
    if (!slots) return std::nullopt;
    entry.slots = *slots;
  }
  return entry;
}

// One line of a hostfile, for errors that name the file, the line number and the line.
struct HostfileLine {
  const std::string& path;
  size_t number;
  std::string_view text;  ///< without its line break

  [[noreturn]] void fail(const std::string& problem, bool showForm = true) const {
    throw Error(ErrorCode::InvalidArgument, "hostfile " + path + ":" + std::to_string(number) + ": '" +
                                                std::string(text) + "': " + problem +
                                                (showForm ? std::string("; ") + kHostfileForm : std::string()));
  }
};

// The settings after a line's host: key=value pairs, spaces allowed around '='; only slots
// is read (Open MPI's max_slots and the like are checked for a value and ignored).
void applyHostfileSettings(std::string_view text, size_t at, HostSlots& entry, const HostfileLine& line) {
  const bool slotsFromColon = entry.slots != 0;
  bool sawSlots = false;
  while (true) {
    while (at < text.size() && isSpace(text[at])) ++at;
    if (at == text.size()) return;
    size_t keyStart = at;
    while (at < text.size() && !isSpace(text[at]) && text[at] != '=') ++at;
    std::string_view key = text.substr(keyStart, at - keyStart);
    if (key.empty()) line.fail("'=' without a key before it");
    while (at < text.size() && isSpace(text[at])) ++at;
    if (at == text.size() || text[at] != '=') line.fail("'" + std::string(key) + "' is not a key=value setting");
    ++at;
    while (at < text.size() && isSpace(text[at])) ++at;
    size_t valueStart = at;
    while (at < text.size() && !isSpace(text[at])) ++at;
    std::string_view value = text.substr(valueStart, at - valueStart);
    if (key != "slots") {
      if (value.empty()) line.fail("'" + std::string(key) + "=' has no value");
      continue;
    }
    if (sawSlots || slotsFromColon) line.fail("slots are given twice");
    sawSlots = true;
    std::string problem;
    auto slots = parseSlots(value, problem);
    if (!slots) line.fail(problem);
    entry.slots = *slots;
  }
}

// A line's host and slots; nothing for a blank or comment-only line.
std::optional<HostSlots> parseHostfileLine(const HostfileLine& line) {
  std::string_view text = trimSpaces(line.text.substr(0, line.text.find('#')));
  if (text.empty()) return std::nullopt;
  size_t wordEnd = 0;
  while (wordEnd < text.size() && !isSpace(text[wordEnd])) ++wordEnd;
  std::string problem;
  auto entry = parseHostItem(text.substr(0, wordEnd), problem);
  if (!entry) line.fail(problem);
  applyHostfileSettings(text, wordEnd, *entry, line);
  return entry;
}

}  // namespace

std::vector<Pick> parsePicks(const std::string& flag, const std::string& text) {
  std::vector<Pick> picks;
  for (std::string_view piece : splitText(trimSpaces(text), '@')) {
    piece = trimSpaces(piece);
    if (piece.empty()) throwInvalidFlag(flag, text, "an empty host name around '@'; " + std::string(kSelectForm));
    HostPart part = splitHost(piece);
    if (!part.problem.empty()) throwInvalidFlag(flag, text, part.problem + "; " + kSelectForm);
    std::vector<int> indices;
    if (part.suffix) {
      for (std::string_view item : splitText(*part.suffix, ',')) {
        auto index = parseInteger(trimSpaces(item));
        if (!index || *index < 0 || *index >= kMaxSlots) {
          throwInvalidFlag(flag, text,
                           "slot index '" + std::string(trimSpaces(item)) + "' of host '" + part.host +
                               "' is not a number from 0 to " + std::to_string(kMaxSlots - 1) + "; " + kSelectForm);
        }
        indices.push_back(static_cast<int>(*index));
      }
    }
    auto same = std::find_if(picks.begin(), picks.end(), [&](const Pick& pick) { return pick.host == part.host; });
    if (same == picks.end()) {
      picks.push_back(Pick{part.host, false, {}});
      same = picks.end() - 1;
    }
    // A host named twice: the union of what each mention names; a whole-host mention wins.
    if (!part.suffix) same->whole = true;
    same->indices.insert(same->indices.end(), indices.begin(), indices.end());
    std::sort(same->indices.begin(), same->indices.end());
    same->indices.erase(std::unique(same->indices.begin(), same->indices.end()), same->indices.end());
  }
  return picks;
}

std::string hostNamesText(const std::vector<HostSlots>& hosts) {
  std::string names;
  size_t shown = 0;
  for (const HostSlots& entry : hosts) {
    if (shown == 8) return names + ", ...";
    names += (shown++ ? ", " : "") + entry.host;
  }
  return names;
}

std::optional<HostSelection> hostSelection(const std::string& include, const std::string& exclude) {
  const bool including = !trimSpaces(include).empty();
  const bool excluding = !trimSpaces(exclude).empty();
  if (including && excluding) {
    throw Error(ErrorCode::InvalidArgument, "--include and --exclude cannot be used together; use one of them");
  }
  if (including) return HostSelection{"--include", include};
  if (excluding) return HostSelection{"--exclude", exclude};
  return std::nullopt;
}

namespace {

std::string indexList(const std::vector<int>& indices) {
  std::string text;
  for (int index : indices) text += (text.empty() ? "" : ",") + std::to_string(index);
  return text;
}

// The slot indices a host offers: its devices when chosen already, else 0..slots-1 (empty: unknown).
std::vector<int> availableSlots(const HostSlots& entry) {
  if (!entry.devices.empty()) return entry.devices;
  std::vector<int> slots;
  for (int index = 0; index < entry.slots; ++index) slots.push_back(index);
  return slots;
}

}  // namespace

std::vector<HostSlots> parseHostList(const std::string& text) {
  if (trimSpaces(text).empty()) throwInvalidFlag("--hosts", text, std::string("no host given; ") + kHostsForm);
  std::vector<std::string_view> items = splitText(trimSpaces(text), ',');
  if (items.size() > 1 && trimSpaces(items.back()).empty()) items.pop_back();  // "h1:4,h2:4,"
  std::vector<HostSlots> hosts;
  for (std::string_view raw : items) {
    std::string_view item = trimSpaces(raw);
    if (item.empty()) throwInvalidFlag("--hosts", text, std::string("an empty host between commas; ") + kHostsForm);
    std::string problem;
    auto entry = parseHostItem(item, problem);
    if (!entry) throwInvalidFlag("--hosts", std::string(item), problem + "; " + kHostsForm);
    for (const HostSlots& earlier : hosts) {
      if (earlier.host == entry->host) {
        throwInvalidFlag("--hosts", text, "host '" + entry->host + "' is listed twice; list each host once");
      }
    }
    hosts.push_back(std::move(*entry));
  }
  return hosts;
}

std::vector<HostSlots> parseHostfile(const std::string& content, const std::string& path) {
  std::vector<HostSlots> hosts;
  std::map<std::string, size_t> indexOf;  // host -> its place in `hosts`
  size_t lineNumber = 0;
  for (std::string_view text : splitText(content, '\n')) {
    ++lineNumber;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    const HostfileLine line{path, lineNumber, text};
    auto entry = parseHostfileLine(line);
    if (!entry) continue;
    auto [earlier, fresh] = indexOf.emplace(entry->host, hosts.size());
    if (fresh) {
      hosts.push_back(std::move(*entry));
      continue;
    }
    // A host on several lines (Open MPI's one line per slot, $PBS_NODEFILE): its slots add
    // up, a line without a count being one slot.
    HostSlots& host = hosts[earlier->second];
    host.slots = std::max(host.slots, 1) + std::max(entry->slots, 1);
    if (host.slots > kMaxSlots) {
      line.fail("host '" + entry->host + "' adds up to more than " + std::to_string(kMaxSlots) + " slots", false);
    }
  }
  if (hosts.empty()) {
    throw Error(ErrorCode::InvalidArgument, "hostfile " + path + " names no host; " + kHostfileForm);
  }
  return hosts;
}

std::vector<HostSlots> readHostfile(const std::string& path, const FileReader& readFile) {
  std::string content;
  try {
    content = readFile(path);
  } catch (const FileReadError& error) {
    switch (error.reason()) {
      case FileReadError::Reason::IsDirectory:
        throw Error(ErrorCode::InvalidArgument, "hostfile " + path + " is a directory; give the path of a file");
      case FileReadError::Reason::Missing:
      case FileReadError::Reason::CannotOpen:
        throw Error(ErrorCode::InvalidArgument,
                    "cannot read hostfile " + path + ": " + error.what() + "; check the path given for the hostfile");
      case FileReadError::Reason::OthersControl:
        throw Error(ErrorCode::InvalidArgument, othersFileRefusal("hostfile", path, error));
      case FileReadError::Reason::CannotRead:
        break;
    }
    throw Error(ErrorCode::InvalidArgument, "cannot read hostfile " + path + ": " + error.what());
  }
  return parseHostfile(content, path);
}

std::vector<HostSlots> firstSlots(std::vector<HostSlots> hosts, int count) {
  std::vector<HostSlots> chosen;
  int left = count;
  for (HostSlots& host : hosts) {
    if (left == 0) break;
    const std::vector<int> slots = availableSlots(host);
    if (slots.empty()) {
      throw Error(ErrorCode::InvalidArgument, "-np " + std::to_string(count) +
                                                  " needs every host's slot count: write " + host.host +
                                                  ":N (or 'slots=N' in the hostfile)");
    }
    const int taken = std::min(left, static_cast<int>(slots.size()));
    if (!host.devices.empty()) host.devices.resize(static_cast<size_t>(taken));
    host.slots = taken;
    left -= taken;
    chosen.push_back(std::move(host));
  }
  if (left > 0) {
    throw Error(ErrorCode::InvalidArgument, "-np " + std::to_string(count) + " but the hosts offer " +
                                                std::to_string(count - left) + " slots; ask for fewer or add hosts");
  }
  return chosen;
}

namespace {

// Each pick by its host, checked against the list: a host not in it, or a slot it lacks, is
// an error naming the flag.
std::map<std::string, const Pick*> checkedPicks(const std::vector<Pick>& picks, const std::vector<HostSlots>& hosts,
                                                const std::string& flag, const std::string& text, bool excluding) {
  std::map<std::string, const Pick*> pickOf;
  for (const Pick& pick : picks) {
    auto found =
        std::find_if(hosts.begin(), hosts.end(), [&](const HostSlots& entry) { return entry.host == pick.host; });
    if (found == hosts.end()) {
      throwInvalidFlag(flag, text,
                       "host '" + pick.host + "' is not in the host list (" + hostNamesText(hosts) +
                           "); name hosts from --hosts or the hostfile");
    }
    std::vector<int> available = availableSlots(*found);
    if (available.empty() && !pick.indices.empty() && excluding) {
      throwInvalidFlag(flag, text,
                       "host '" + pick.host + "' has no slot count, so its slots cannot be excluded; give it one (" +
                           pick.host + ":N) or exclude the whole host");
    }
    for (int index : pick.indices) {
      if (!available.empty() && !std::binary_search(available.begin(), available.end(), index)) {
        throwInvalidFlag(flag, text,
                         "host '" + pick.host + "' has no slot " + std::to_string(index) +
                             " (its slots: " + indexList(available) + "); name only those");
      }
    }
    pickOf[pick.host] = &pick;
  }
  return pickOf;
}

}  // namespace

std::vector<HostSlots> selectHosts(std::vector<HostSlots> hosts, const std::string& include,
                                   const std::string& exclude) {
  const std::optional<HostSelection> selection = hostSelection(include, exclude);
  if (!selection) return hosts;
  const bool including = selection->including();
  const bool excluding = !including;
  const std::string& flag = selection->flag;
  const std::string& text = selection->text;

  const std::vector<Pick> picks = parsePicks(flag, text);
  const std::map<std::string, const Pick*> pickOf = checkedPicks(picks, hosts, flag, text, excluding);

  std::vector<HostSlots> selected;
  for (HostSlots& entry : hosts) {
    auto found = pickOf.find(entry.host);
    const Pick* pick = found == pickOf.end() ? nullptr : found->second;
    if (including) {
      if (!pick) continue;
      if (!pick->whole) {
        entry.devices = pick->indices;
        entry.slots = static_cast<int>(pick->indices.size());
      }
      selected.push_back(std::move(entry));
    } else {
      if (pick && pick->whole) continue;
      if (pick) {
        std::vector<int> remaining;
        for (int index : availableSlots(entry)) {
          if (!std::binary_search(pick->indices.begin(), pick->indices.end(), index)) remaining.push_back(index);
        }
        if (remaining.empty()) continue;
        entry.slots = static_cast<int>(remaining.size());
        entry.devices = std::move(remaining);
      }
      selected.push_back(std::move(entry));
    }
  }
  if (selected.empty()) throwInvalidFlag(flag, text, "it removes every host; leave at least one");
  return selected;
}

}  // namespace pltrun
