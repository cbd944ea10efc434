#include "launcher/plan/site_config.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>

namespace pltrun {

namespace {

[[noreturn]] void badSetting(const std::string& path, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "site config " + path + ": " + why);
}

// The file's text; none when the default file is absent (a site without one).
std::optional<std::string> siteConfigText(const Environment& env, const FileReader& readFile, std::string& path) {
  auto variable = env.find("PLTRUN_CONFIG");
  const bool named = variable != env.end();
  if (named && variable->second.empty()) return std::nullopt;  // PLTRUN_CONFIG= : no site defaults
  path = named ? variable->second : kSiteConfigPath;
  try {
    return readFile(path);
  } catch (const FileReadError& error) {
    if (error.reason() == FileReadError::Reason::Missing && !named) return std::nullopt;
    badSetting(path, std::string(error.what()) + (named ? " (named by PLTRUN_CONFIG)" : ""));
  }
}

// Options that say one thing in different ways: a job that gives one of them (flag or PET_*
// variable) sets that thing, so the file's others are left out rather than refused as a
// contradiction ("--devices 1" with the site's nproc-per-node = 8).
const std::vector<std::vector<std::string>> kAlternatives = {
    {"--nproc-per-node", "--devices", "--np"},
    {"--hosts", "--hostfile"},
    {"--include", "--exclude"},
    {"--module", "--no-python"},
    {"--rdzv-id", "--run-id"},
    {"--standalone", "--nnodes"},
    {"--standalone", "--rdzv-endpoint"},
};

bool givenAnotherWay(const std::string& option, const std::set<std::string>& given) {
  for (const std::vector<std::string>& group : kAlternatives) {
    if (std::find(group.begin(), group.end(), option) == group.end()) continue;
    for (const std::string& other : group) {
      if (other != option && given.count(other) != 0) return true;
    }
  }
  return false;
}

// The options the command line or a PET_* variable set.
std::set<std::string> givenOptions(const CLI::App& app) {
  std::set<std::string> given;
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() != 0) given.insert(option->get_name());
  }
  return given;
}

std::string joined(const std::vector<std::string>& inputs) {
  std::string text;
  for (const std::string& input : inputs) text += (text.empty() ? "" : ",") + input;
  return text;
}

}  // namespace

SiteSettings applySiteConfig(CLI::App& app, const Environment& env, const FileReader& readFile) {
  SiteSettings applied;
  std::string& path = applied.path;
  const std::optional<std::string> text = siteConfigText(env, readFile, path);
  if (!text) return applied;
  std::istringstream stream(*text);
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(stream);
  } catch (const CLI::Error& error) {
    badSetting(path, std::string("not TOML pltrun can read: ") + error.what());
  }
  const std::set<std::string> given = givenOptions(app);
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "++") continue;  // CLI11's marker for the start of a [section]
    if (!item.parents.empty()) {
      badSetting(path, "'" + item.fullname() + "': sections are not read; write the options at the top level");
    }
    CLI::Option* option = app.get_option_no_throw("--" + item.name);
    if (option == nullptr || item.name == "help" || item.name == "version") {
      badSetting(path, "'" + item.name + "' is not a pltrun option; keys are long options without the dashes, " +
                           "like max-restarts = 3 (see pltrun --help)");
    }
    if (option->count() != 0 || givenAnotherWay(option->get_name(), given)) continue;
    try {
      option->add_result(option->get_type_size() == 0 && item.inputs.empty() ? "true" : joined(item.inputs));
      option->run_callback();
    } catch (const CLI::ParseError& error) {
      badSetting(path, "'" + item.name + "': " + error.what());
    }
    applied.options.push_back(option->get_name());
  }
  return applied;
}

Error tracedToSiteConfig(const Error& error, const SiteSettings& settings) {
  const std::string message = error.what();
  for (const std::string& option : settings.options) {
    // "--nnodes" named, not the "--nnodes" in "--nnodes-foo".
    const size_t at = message.find(option);
    if (at == std::string::npos) continue;
    const size_t after = at + option.size();
    const bool named = after == message.size() || (std::isalnum(static_cast<unsigned char>(message[after])) == 0 &&
                                                   message[after] != '-' && message[after] != '_');
    if (named) return Error(error.code(), message + " (set in site config " + settings.path + ")");
  }
  return error;
}

}  // namespace pltrun
