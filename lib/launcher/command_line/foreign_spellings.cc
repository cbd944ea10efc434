#include "launcher/command_line/foreign_spellings.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "pltrun/error.h"

namespace pltrun {
namespace {

// mpirun's and horovodrun's one-dash long options (and mpirun's other names), and what
// pltrun calls them.
constexpr std::array<std::pair<const char*, const char*>, 14> kOneDashWords = {{
    {"-np", "--np"},  // CLI11 would read -n -p
    {"-host", "--hosts"},
    {"-hosts", "--hosts"},
    {"--host", "--hosts"},  // mpirun's; as a prefix it would be ambiguous (--hosts, --hostfile)
    {"-hostfile", "--hostfile"},
    {"-machinefile", "--hostfile"},
    {"--machinefile", "--hostfile"},
    {"-n", "--np"},
    {"-N", "--nproc-per-node"},  // Open MPI: processes per node
    {"-npernode", "--nproc-per-node"},
    {"--npernode", "--nproc-per-node"},
    {"-oversubscribe", "--oversubscribe"},
    {"-bind-to", "--bind-to"},
    {"-verbose", "--verbose"},
}};

// Open MPI's options that have no meaning for a launcher whose workers talk through NCCL
// or gloo.
constexpr std::array<const char*, 9> kMpiOnly = {
    "-mca", "--mca", "-gmca", "--gmca", "-map-by", "--map-by", "--display-map", "-display-map", "--report-bindings"};

// Other launchers' words that pltrun has no flag for, and what to do instead.
constexpr std::array<std::pair<const char*, const char*>, 5> kWordsWithAdvice = {{
    {"-wdir", "start pltrun in that directory: workers start in pltrun's working directory"},
    {"--wdir", "start pltrun in that directory: workers start in pltrun's working directory"},
    {"--gpus", "use --devices N (Lightning's) or --nproc-per-node gpu"},
    {"--launcher", "pltrun starts the agents itself over ssh; see --remote-command for another way in"},
    {"--master-port-range", "use --master-port (or leave it out: pltrun picks a free port)"},
}};

// Edit distance, for the spelling an unknown option was most likely meant to be.
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

// "; did you mean --hostfile?" when one of pltrun's spellings (or another launcher's that
// pltrun reads) is within two edits of `word`; what to do instead for a word pltrun knows
// from another launcher but has no flag for.
std::string adviceFor(const std::string& word, const CLI::App& app) {
  for (const auto& [theirs, advice] : kWordsWithAdvice) {
    if (word == theirs) return "; " + std::string(advice);
  }
  std::vector<std::string> spellings;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // internal
    for (const std::string& name : option->get_lnames()) spellings.push_back("--" + name);
  }
  for (const auto& [theirs, ours] : kOneDashWords) spellings.push_back(theirs);
  std::string best;
  size_t bestDistance = 3;
  for (const std::string& spelling : spellings) {
    const size_t distance = editDistance(word, spelling);
    if (distance < bestDistance && distance * 3 < word.size()) {
      best = spelling;
      bestDistance = distance;
    }
  }
  return best.empty() ? "" : "; did you mean " + best + "?";
}

// Whether -H's value names a hostfile: one line in `notes` either way. A file another user
// could have written is refused, not taken as a host list: its owner may have meant it as one.
bool namesHostfile(const std::string& value, const FileReader& readOwnFile, std::vector<LaunchNote>& notes) {
  const std::string said = "-H " + value + ": read as ";
  try {
    readOwnFile(value);
    notes.push_back({false, said + "a hostfile, " + shownPath(value) + " (a file of that name here)"});
    return true;
  } catch (const FileReadError& error) {
    switch (error.reason()) {
      case FileReadError::Reason::OthersControl:
        throw Error(ErrorCode::InvalidArgument,
                    othersFileRefusal("-H " + value + " as a hostfile", value, error) + "; to name hosts use --hosts");
      case FileReadError::Reason::Missing:
        notes.push_back({false, said + "a host list (no file of that name)"});
        return false;
      case FileReadError::Reason::IsDirectory:
        notes.push_back({false, said + "a host list (a directory has that name, not a file)"});
        return false;
      case FileReadError::Reason::CannotOpen:
      case FileReadError::Reason::CannotRead:
        break;
    }
    notes.push_back({false, said + "a host list (a file of that name cannot be read: " + error.what() + ")"});
    return false;
  }
}

}  // namespace

std::optional<std::string> pltrunSpelling(const std::string& arg, const CLI::App& app) {
  const size_t equals = arg.find('=');
  const std::string word = arg.substr(0, equals);
  const std::string value = equals == std::string::npos ? "" : arg.substr(equals);
  for (const auto& [theirs, ours] : kOneDashWords) {
    if (word == theirs) return ours + value;
  }
  for (const char* option : kMpiOnly) {
    if (word == option) {
      throw Error(ErrorCode::InvalidArgument, "'" + word +
                                                  "' is an Open MPI option; pltrun is not an MPI launcher (its workers "
                                                  "meet through torch's store and NCCL or gloo): drop it");
    }
  }
  if (word.size() <= 2 || word[0] != '-' || word[1] == '-') return std::nullopt;
  // A one-dash word of several letters: -r3 is -r 3 (CLI11 reads that), but a word whose
  // first letter is not an option taking a value would be read letter by letter.
  const CLI::Option* shortOption = app.get_option_no_throw(word.substr(0, 2));
  if (shortOption != nullptr && takesValue(*shortOption)) return std::nullopt;
  if (app.get_option_no_throw("-" + word) != nullptr) return "-" + word + value;  // -log-dir: --log-dir
  throw unknownOption(word, app);
}

Error unknownOption(const std::string& word, const CLI::App& app) {
  const std::string advice = adviceFor(word, app);
  const bool oneDash = word.size() > 2 && word[1] != '-';
  return Error(ErrorCode::InvalidArgument, "unknown option '" + word + "'" + advice + " (see pltrun --help" +
                                               (oneDash && advice.empty() ? "; long options take two dashes)" : ")"));
}

std::optional<std::string> hostfileFromDashH(const std::vector<std::string>& args, size_t at,
                                             const FileReader& readOwnFile, std::vector<LaunchNote>& notes) {
  const std::string& arg = args[at];
  if (arg.rfind("-H", 0) != 0) return std::nullopt;
  if (arg == "-H") {
    if (at + 1 < args.size() && namesHostfile(args[at + 1], readOwnFile, notes)) return std::string("--hostfile");
    return std::nullopt;
  }
  const std::string value = arg.substr(arg[2] == '=' ? 3 : 2);  // -H=FILE, -HFILE
  if (namesHostfile(value, readOwnFile, notes)) return "--hostfile=" + value;
  return std::nullopt;
}

bool takesValue(const CLI::Option& option) {
  // A flag's type size is 1 in CLI11 2.1 too: the count of values it expects tells them apart.
  return option.get_items_expected_min() > 0;
}

}  // namespace pltrun
