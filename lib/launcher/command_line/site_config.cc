#include "launcher/command_line/site_config.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "launcher/command_line/site_config_file.h"
#include "launcher/plan/text_parsing.h"

namespace pltrun {

namespace {

// The file's text; none when the default file is absent (a site without one).
std::optional<std::string> siteConfigText(const Environment& env, const FileReader& readFile, const FileProbe& exists,
                                          std::string& path) {
  auto variable = env.find("PLTRUN_CONFIG");
  const bool named = variable != env.end();
  if (named && variable->second.empty()) return std::nullopt;  // PLTRUN_CONFIG= : no site defaults
  path = named ? variable->second : kSiteConfigPath;
  if (!named && !exists(path)) return std::nullopt;
  try {
    return readFile(path);
  } catch (const FileReadError& error) {
    if (error.reason() == FileReadError::Reason::Missing && !named) return std::nullopt;
    if (error.reason() == FileReadError::Reason::OthersControl) {
      throw Error(ErrorCode::InvalidArgument, othersFileRefusal("site config", path, error));
    }
    const std::string why = error.reason() == FileReadError::Reason::IsDirectory
                                ? "is a directory; give the path of a file"
                                : std::string(error.what());
    throwSiteConfigError(path, why + (named ? " (named by PLTRUN_CONFIG)" : ""));
  }
}

// Options that place one job (its nodes, hosts, rendezvous, run id). In a file every node
// reads, they would make every job one job, hide Slurm's variables, and contradict the
// flags the driver gives its agents: refused.
const std::set<std::string> kPerJobOptions = {
    "--hosts",     "--hostfile",    "--include",     "--exclude",          "--np",           "--nnodes",
    "--node-rank", "--master-addr", "--master-port", "--rdzv-endpoint",    "--rdzv-backend", "--rdzv-id",
    "--run-id",    "--standalone",  "--local-addr",  "--exit-with-parent", "--num-nodes",    "--num-gpus"};

// The multi-host driver's own options: defaults for its runs, left out of every other run
// (where they would be refused as "goes with --hosts").
const std::set<std::string> kDriverOptions = {"--ssh-port", "--ssh-identity",      "--remote-command", "--export",
                                              "--env-file", "--network-interface", "--remote-pltrun"};

// Options that say one thing in different ways: a job that gives one of them (flag or PET_*
// variable) sets that thing, so the file's others are left out rather than refused as a
// contradiction ("--devices 1" with the site's nproc-per-node = 8).
const std::vector<std::vector<std::string>> kAlternatives = {
    {"--nproc-per-node", "--devices", "--np"},
    {"--module", "--no-python"},
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

// The most a site file may hold: options with short values are a few KiB.
constexpr size_t kSiteConfigLimit = 64 * 1024;

// The file's top-level keys, or none without a file.
std::optional<std::vector<SiteEntry>> siteEntries(const Environment& env, const FileReader& readFile,
                                                  const FileProbe& exists, std::string& path) {
  const std::optional<std::string> text = siteConfigText(env, readFile, exists, path);
  if (!text) return std::nullopt;
  if (text->size() > kSiteConfigLimit) {
    throwSiteConfigError(path, "is " + std::to_string(text->size()) + " bytes; a site file of options is at most " +
                                   std::to_string(kSiteConfigLimit));
  }
  return readSiteEntries(*text, path);
}

// The option `entry` sets, or a one-line error: no such option, or one that places a job.
CLI::Option* siteOption(CLI::App& app, const SiteEntry& entry) {
  CLI::Option* option = app.get_option_no_throw("--" + entry.key);
  if (option == nullptr || entry.key == "help" || entry.key == "version") {
    throwSiteConfigError(entry.keyPlace, "'" + entry.key +
                                             "' is not a pltrun option; keys are long options without the dashes, " +
                                             "like max-restarts = 3 (see pltrun --help)");
  }
  if (kPerJobOptions.count(option->get_name()) != 0) {
    throwSiteConfigError(entry.keyPlace,
                         "'" + entry.key + "' places one job, so it goes on that job's command line, not in a file " +
                             "every node and job reads (site defaults are how jobs run: max-restarts, term-timeout, " +
                             "log-dir, rdzv-conf, ...)");
  }
  return option;
}

// max-restarts and max_restarts (or term-timeout and shutdown-timeout) in one file: which
// one the job takes would depend on their order, as the command line refuses the pair.
void refuseSecondKey(std::map<std::string, const SiteEntry*>& keyOf, const std::string& option,
                     const SiteEntry& entry) {
  const auto [earlier, first] = keyOf.emplace(option, &entry);
  if (first) return;
  const SiteEntry& other = *earlier->second;
  throwSiteConfigError(entry.keyPlace, "'" + entry.key + "' and '" + other.key + "' (at " + other.keyPlace +
                                           ") both set " + option + "; keep one of them");
}

}  // namespace

SiteSettings applySiteConfig(CLI::App& app, const Environment& env, const FileReader& readFile,
                             const FileProbe& exists) {
  SiteSettings applied;
  const std::optional<std::vector<SiteEntry>> entries = siteEntries(env, readFile, exists, applied.path);
  if (!entries) return applied;
  applied.read = true;
  const std::set<std::string> given = givenOptions(app);
  const bool driverRun = given.count("--hosts") != 0 || given.count("--hostfile") != 0;
  std::map<std::string, const SiteEntry*> keyOf;  // each option's key in the file
  for (const SiteEntry& entry : *entries) {
    CLI::Option* option = siteOption(app, entry);
    const std::string name = option->get_name();
    refuseSecondKey(keyOf, name, entry);
    if (option->count() != 0 || givenAnotherWay(name, given)) continue;
    if (kDriverOptions.count(name) != 0 && !driverRun) continue;
    try {
      if (option->get_items_expected_max() > 1) {
        for (const std::string& value : entry.values) option->add_result(value);  // -x: one name each
      } else {
        option->add_result(joinText(entry.values, ","));
      }
      option->run_callback();
    } catch (const CLI::ParseError& error) {
      throwSiteConfigError(entry.valuePlace, "'" + entry.key + "': " + error.what());
    }
    applied.options.push_back({name, entry.valuePlace});
  }
  return applied;
}

std::optional<std::string> siteConfigValue(const std::string& key, const Environment& env, const FileReader& readFile,
                                           const FileProbe& exists) {
  std::string path;
  const std::optional<std::vector<SiteEntry>> entries = siteEntries(env, readFile, exists, path);
  if (!entries) return std::nullopt;
  for (const SiteEntry& entry : *entries) {
    std::string name = entry.key;
    std::replace(name.begin(), name.end(), '_', '-');  // rdzv_conf is rdzv-conf
    if (name == key) return joinText(entry.values, ",");
  }
  return std::nullopt;
}

bool namesOption(const std::string& message, const std::string& option) {
  for (size_t at = message.find(option); at != std::string::npos; at = message.find(option, at + 1)) {
    const size_t after = at + option.size();
    if (after == message.size() || (std::isalnum(static_cast<unsigned char>(message[after])) == 0 &&
                                    message[after] != '-' && message[after] != '_'))
      return true;
  }
  return false;
}

Error tracedToSiteConfig(const Error& error, const SiteSettings& settings) {
  for (const SiteSettings::Setting& setting : settings.options) {
    if (namesOption(error.what(), setting.option)) {
      return Error(error.code(), std::string(error.what()) + " (set in site config " + setting.place + ")");
    }
  }
  return error;
}

}  // namespace pltrun
