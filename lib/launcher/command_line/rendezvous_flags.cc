#include "launcher/command_line/rendezvous_flags.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <string_view>

#include "base/host_port_text.h"
#include "launcher/command_line/slurm.h"
#include "launcher/plan/shell_words.h"
#include "launcher/plan/text_parsing.h"
#include "pltrun/error.h"

namespace pltrun {
namespace {

constexpr const char* kEndpointForms =
    "expected HOST[:PORT], [IPv6]:PORT or a bare IPv6 address like ::1, with PORT 0..65535";
constexpr const char* kConfFlag = "--rdzv-conf";
constexpr const char* kConfKeys =
    "join_timeout, timeout, last_call_timeout, close_timeout, keep_alive_interval, heartbeat_timeout, "
    "keep_alive_max_attempt, read_timeout, is_host, secret_file, expected_hosts, node_name, use_libuv, store_type; "
    "with etcd also protocol, "
    "cacert, cert, key, etcd_prefix, user, password_file";

// The --rdzv-conf keys that applyConfItem reads and rendezvousConfText writes, spelled once.
constexpr const char* kJoinTimeoutKey = "join_timeout";
constexpr const char* kLastCallTimeoutKey = "last_call_timeout";
constexpr const char* kCloseTimeoutKey = "close_timeout";
constexpr const char* kKeepAliveIntervalKey = "keep_alive_interval";
constexpr const char* kKeepAliveMaxAttemptKey = "keep_alive_max_attempt";
constexpr const char* kReadTimeoutKey = "read_timeout";
constexpr const char* kSecretFileKey = "secret_file";
constexpr const char* kIsHostKey = "is_host";
constexpr const char* kExpectedHostsKey = "expected_hosts";
constexpr const char* kNodeNameKey = "node_name";

// A host name or IPv4 address: letters, digits, '.', '-', '_'.
bool isPlainHost(std::string_view host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), isNameCharacter);
}

// An IPv6 address, as far as its characters go: hex digits, ':' and '.' (an embedded IPv4
// address), then an optional %zone (an interface name).
bool isIpv6Text(std::string_view host) {
  const size_t zone = host.find('%');
  std::string_view address = host.substr(0, zone);
  if (address.empty() || address.find(':') == std::string_view::npos) return false;
  const bool addressOk = std::all_of(address.begin(), address.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
  });
  if (!addressOk) return false;
  if (zone == std::string_view::npos) return true;
  std::string_view name = host.substr(zone + 1);
  return !name.empty() && std::all_of(name.begin(), name.end(), isNameCharacter);
}

int parsePort(const std::string& flag, const std::string& text, std::string_view port) {
  auto number = parseInteger(port);
  if (!number || *number < 0 || *number > 65535) {
    throwInvalidFlag(flag, text, "the port must be 0..65535; " + std::string(kEndpointForms));
  }
  return static_cast<int>(*number);
}

std::chrono::milliseconds positiveSeconds(const std::string& item, const std::string& key, std::string_view value) {
  auto duration = parseSeconds(value);
  if (!duration || duration->count() <= 0) {
    throwInvalidFlag(kConfFlag, item, key + " expects a number of seconds > 0, like 30 or 0.5");
  }
  return *duration;
}

bool parseBoolean(const std::string& item, const std::string& key, std::string_view value) {
  const std::string lower = lowercase(value);
  if (lower == "true" || lower == "1" || lower == "yes" || lower == "t" || lower == "y") return true;
  if (lower == "false" || lower == "0" || lower == "no" || lower == "f" || lower == "n") return false;
  throwInvalidFlag(kConfFlag, item, key + " expects true or false (also 1/0, yes/no)");
}

// torchrun's etcd keys, and pltrun's for etcd authentication. Files are read (and their
// permissions checked) when the agent starts. false: not an etcd key.
bool applyEtcdConfItem(const std::string& item, const std::string& key, std::string_view value, EtcdSettings& etcd) {
  if (key == "protocol") {
    if (value != "http" && value != "https") throwInvalidFlag(kConfFlag, item, "protocol expects http or https");
    etcd.https = value == "https";
  } else if (key == "cacert") {
    etcd.caFile = std::string(value);
  } else if (key == "cert") {
    etcd.certFile = std::string(value);
  } else if (key == "key") {
    etcd.keyFile = std::string(value);
  } else if (key == "etcd_prefix") {
    if (value.front() != '/') throwInvalidFlag(kConfFlag, item, "etcd_prefix expects a key prefix starting with /");
    etcd.prefix = std::string(value);
    if (etcd.prefix.back() != '/') etcd.prefix += '/';
  } else if (key == "user") {
    etcd.user = std::string(value);
  } else if (key == "password_file") {
    etcd.passwordFile = std::string(value);
  } else {
    return false;
  }
  return true;
}

// A host name or address as the agents publish it (IPv6 with its ':' and %zone).
bool isNodeName(std::string_view name) {
  return !name.empty() &&
         std::all_of(name.begin(), name.end(), [](char c) { return isNameCharacter(c) || c == ':' || c == '%'; });
}

// expected_hosts=gpu-[01-03,07],gpu-10: Slurm's hostlist grammar (slurm.h).
std::vector<std::string> parseExpectedHosts(const std::string& item, std::string_view value) {
  constexpr const char* kForm = "expected_hosts expects host names separated by commas, with ranges like gpu-[01-08]";
  std::vector<std::string> names;
  try {
    names = expandHostlist(std::string(value));
  } catch (const Error& error) {
    throwInvalidFlag(kConfFlag, item, std::string(kForm) + ": " + error.what());
  }
  for (std::string& name : names) {
    name = std::string(trimSpaces(name));  // "a , b": blanks around the commas are the list's
    if (!isNodeName(name)) throwInvalidFlag(kConfFlag, item, std::string(kForm) + "; '" + name + "' is not one");
  }
  return names;
}

// A value as written, or the inside of its "..." (a backslash keeps " and \ in it).
std::string unquotedConfValue(const std::string& item, std::string_view value) {
  if (value.empty() || value.front() != '"') return std::string(value);
  std::string text;
  size_t at = 1;
  if (!appendDoubleQuoted(value, at, text) || at != value.size()) {
    throwInvalidFlag(kConfFlag, item, "a value in \"...\" ends with its closing quote; write \\\" for a quote in it");
  }
  return text;
}

void applyConfItem(const std::string& item, RendezvousSettings& settings) {
  const size_t equals = item.find('=');
  if (equals == std::string::npos) {
    throwInvalidFlag(kConfFlag, item,
                     "expected KEY=VALUE pairs separated by commas, like join_timeout=900,is_host=false");
  }
  const std::string key(trimSpaces(std::string_view(item).substr(0, equals)));
  const std::string unquoted = unquotedConfValue(item, trimSpaces(std::string_view(item).substr(equals + 1)));
  const std::string_view value = unquoted;
  if (key.empty()) throwInvalidFlag(kConfFlag, item, "the key before '=' is missing; expected KEY=VALUE");
  if (value.empty()) throwInvalidFlag(kConfFlag, item, key + " needs a value; expected KEY=VALUE");

  if (key == kJoinTimeoutKey || key == "timeout") {
    settings.joinTimeout = positiveSeconds(item, key, value);
  } else if (key == kLastCallTimeoutKey) {
    settings.lastCallTimeout = positiveSeconds(item, key, value);
  } else if (key == kCloseTimeoutKey) {
    settings.closeTimeout = positiveSeconds(item, key, value);
  } else if (key == kKeepAliveIntervalKey || key == "heartbeat_timeout") {
    settings.keepAliveInterval = positiveSeconds(item, key, value);
  } else if (key == kReadTimeoutKey) {
    settings.readTimeout = positiveSeconds(item, key, value);
  } else if (key == kKeepAliveMaxAttemptKey) {
    auto attempts = parseInteger(value);
    if (!attempts || *attempts < 1 || *attempts > 1'000'000) {
      throwInvalidFlag(kConfFlag, item, key + " expects a positive integer, like 3");
    }
    settings.keepAliveMaxAttempt = static_cast<int>(*attempts);
  } else if (key == kSecretFileKey) {
    settings.secretFile = std::string(value);  // read (and its permissions checked) when the agent starts
  } else if (key == kIsHostKey) {
    settings.isHost = parseBoolean(item, key, value);
  } else if (key == kExpectedHostsKey) {
    settings.expectedHosts = parseExpectedHosts(item, value);
  } else if (key == kNodeNameKey) {
    if (!isNodeName(value)) throwInvalidFlag(kConfFlag, item, "node_name expects a host name, like gpu-07");
    settings.nodeName = std::string(value);
  } else if (applyEtcdConfItem(item, key, value, settings.etcd)) {
    // An etcd key: checked against the backend once the whole command line is read.
  } else if (key == "use_libuv") {
    // torch's choice of TCPStore server loop; pltrun's store serves both kinds of client.
    if (value != "0" && value != "1" && value != "true" && value != "false" && value != "True" && value != "False") {
      throwInvalidFlag(kConfFlag, item, "use_libuv expects true or false (it chooses torch's own store loop)");
    }
  } else if (key == "store_type") {
    if (value != "tcp" && value != "TCP") {
      throwInvalidFlag(kConfFlag, item,
                       "pltrun's rendezvous store is a TCP store; store_type=" + std::string(value) +
                           " (torch's file store) is not supported");
    }
  } else {
    throwInvalidFlag(kConfFlag, item, "unknown key '" + key + "'; accepted keys: " + kConfKeys);
  }
}

// `--rdzv-conf='join_timeout=5,last_call_timeout=1'` with the quotes inside the argument, as
// torch's own tests and many scripts write it: torchrun reads it, so one pair of matching
// quotes around the whole value is taken off (a quote anywhere else is still an error).
std::string_view withoutEnclosingQuotes(std::string_view text) {
  text = trimSpaces(text);
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  return text;
}

// Whether a comma before `rest` ends a pair: KEY= follows it (blanks and empty items
// between), or nothing does (a trailing comma).
bool pairFollows(std::string_view rest) {
  const size_t start = rest.find_first_not_of(" \t,");
  if (start == std::string_view::npos) return true;
  const size_t equals = rest.find('=', start);
  return equals != std::string_view::npos && isVariableName(trimSpaces(rest.substr(start, equals - start)));
}

// The pairs of "a=1,b=2". A comma ends a pair only where another KEY= (or the end) follows,
// and never inside "...": a value holds commas as it is written where what follows them is
// no key (expected_hosts=a,b,c and expected_hosts=gpu-[01-03,07], secret_file=/p/a,b), and
// anything at all in double quotes (secret_file="/p/a,b=c", as rendezvousConfPair writes it).
std::vector<std::string> rendezvousConfItems(const std::string& text) {
  const std::string_view whole = withoutEnclosingQuotes(text);
  std::vector<std::string> items;
  bool quoted = false;
  size_t start = 0;
  for (size_t at = 0; at <= whole.size(); ++at) {
    if (at < whole.size()) {
      if (quoted && whole[at] == '\\') {
        ++at;  // \" and \\ stay inside the quotes
        continue;
      }
      if (whole[at] == '"') quoted = !quoted;
      if (quoted || whole[at] != ',' || !pairFollows(whole.substr(at + 1))) continue;
    }
    std::string item(trimSpaces(whole.substr(start, at - start)));
    if (!item.empty()) items.push_back(std::move(item));  // "a=1,", ",a=1" and "a=1,,b=2" are fine
    start = at + 1;
  }
  return items;
}

}  // namespace

Endpoint parseEndpoint(const std::string& flag, const std::string& text, int defaultPort) {
  const std::string_view whole = trimSpaces(text);
  if (whole.empty()) throwInvalidFlag(flag, text, "the host is empty; " + std::string(kEndpointForms));
  Endpoint endpoint;
  endpoint.port = defaultPort;
  std::optional<std::string_view> port;
  bool hostOk = false;
  if (whole.front() == '[') {  // [v6addr] or [v6addr]:port
    const size_t close = whole.find(']');
    if (close == std::string_view::npos)
      throwInvalidFlag(flag, text, "'[' without ']'; " + std::string(kEndpointForms));
    std::string_view host = whole.substr(1, close - 1);
    std::string_view rest = whole.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') throwInvalidFlag(flag, text, kEndpointForms);
      port = rest.substr(1);
    }
    endpoint.host = std::string(host);
    hostOk = isIpv6Text(host) || isPlainHost(host);
  } else {
    const auto colons = std::count(whole.begin(), whole.end(), ':');
    if (colons == 1) {  // host:port
      const size_t colon = whole.find(':');
      endpoint.host = std::string(whole.substr(0, colon));
      port = whole.substr(colon + 1);
      hostOk = isPlainHost(endpoint.host);
    } else {  // host, or a bare IPv6 address (no port then)
      endpoint.host = std::string(whole);
      hostOk = colons == 0 ? isPlainHost(whole) : isIpv6Text(whole);
    }
  }
  if (endpoint.host.empty()) throwInvalidFlag(flag, text, "the host is empty; " + std::string(kEndpointForms));
  if (!hostOk) {
    throwInvalidFlag(flag, text,
                     "'" + endpoint.host + "' is not a host name or address; " + std::string(kEndpointForms));
  }
  if (port) endpoint.port = parsePort(flag, text, *port);
  return endpoint;
}

NodeRange parseNodeRange(const std::string& flag, const std::string& text) {
  constexpr const char* kAccepted = "expected a node count like 2, or MIN:MAX like 1:4 (1..100000)";
  auto parts = splitText(text, ':');
  if (parts.size() > 2) throwInvalidFlag(flag, text, kAccepted);
  auto count = [&](std::string_view part) {
    auto number = parseInteger(trimSpaces(part));
    if (!number || *number < 1 || *number > 100000) throwInvalidFlag(flag, text, kAccepted);
    return static_cast<int>(*number);
  };
  NodeRange range;
  range.minNodes = count(parts[0]);
  range.maxNodes = parts.size() == 2 ? count(parts[1]) : range.minNodes;
  if (range.minNodes > range.maxNodes) {
    throwInvalidFlag(flag, text,
                     "MIN " + std::to_string(range.minNodes) + " is greater than MAX " +
                         std::to_string(range.maxNodes) + "; expected MIN:MAX with MIN <= MAX");
  }
  return range;
}

RendezvousBackend parseRendezvousBackend(const std::string& flag, const std::string& text) {
  if (text == "static") return RendezvousBackend::Static;
  if (text == "c10d") return RendezvousBackend::C10d;
  if (text == "etcd") return RendezvousBackend::Etcd;
  if (text == "etcd-v2") {
    throwInvalidFlag(flag, text, "etcd's v2 API is gone since etcd 3.6; use etcd (pltrun speaks etcd's v3 API)");
  }
  throwInvalidFlag(flag, text, "expected static, c10d or etcd");
}

std::vector<Endpoint> parseEtcdMembers(const std::string& flag, const std::string& text) {
  std::vector<Endpoint> members;
  for (std::string_view piece : splitText(text, ',')) {
    if (trimSpaces(piece).empty()) continue;  // a trailing comma
    const Endpoint endpoint = parseEndpoint(flag, std::string(piece), kDefaultEtcdPort);
    if (endpoint.port == 0) {
      throwInvalidFlag(flag, text, "an etcd member needs its client port (2379 by default), not 0");
    }
    members.push_back({endpoint.host, endpoint.port});
  }
  if (members.empty()) throwInvalidFlag(flag, text, "expected HOST[:PORT],HOST[:PORT],... of the etcd members");
  return members;
}

void applySecretFileDefault(const Environment& env, RendezvousSettings& settings) {
  if (!settings.secretFile.empty()) return;
  auto fromEnvironment = env.find("PLTRUN_SECRET_FILE");
  if (fromEnvironment != env.end()) settings.secretFile = fromEnvironment->second;
}

void applyRendezvousConf(const std::string& text, RendezvousSettings& settings) {
  for (const std::string& item : rendezvousConfItems(text)) applyConfItem(item, settings);
}

std::string rendezvousConfPair(const std::string& key, const std::string& value) {
  bool plain = value.find_first_of("\"\\") == std::string::npos && trimSpaces(value).size() == value.size();
  for (size_t comma = value.find(','); plain && comma != std::string::npos; comma = value.find(',', comma + 1)) {
    plain = !pairFollows(std::string_view(value).substr(comma + 1));
  }
  if (plain) return key + "=" + value;
  std::string quoted = key + "=\"";
  for (const char c : value) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}

std::string rendezvousConfText(const RendezvousSettings& settings) {
  std::vector<std::string> items;
  const auto add = [&items](const char* key, const std::string& value) {
    items.push_back(rendezvousConfPair(key, value));
  };
  if (settings.isHost) add(kIsHostKey, *settings.isHost ? "1" : "0");
  if (!settings.secretFile.empty()) add(kSecretFileKey, settings.secretFile);
  add(kJoinTimeoutKey, secondsFlagText(settings.joinTimeout));
  add(kLastCallTimeoutKey, secondsFlagText(settings.lastCallTimeout));
  add(kCloseTimeoutKey, secondsFlagText(settings.closeTimeout));
  add(kKeepAliveIntervalKey, secondsFlagText(settings.keepAliveInterval));
  add(kKeepAliveMaxAttemptKey, std::to_string(settings.keepAliveMaxAttempt));
  add(kReadTimeoutKey, secondsFlagText(settings.readTimeout));
  if (!settings.nodeName.empty()) add(kNodeNameKey, settings.nodeName);
  // Last: the names' commas continue its list (rendezvousConfItems).
  if (!settings.expectedHosts.empty()) add(kExpectedHostsKey, joinText(settings.expectedHosts, ","));
  return joinText(items, ",");
}

}  // namespace pltrun
