#pragma once
// Site defaults: a TOML file of pltrun's long options, for what every job on a cluster
// shares (the rendezvous settings, a log directory, a grace period):
//
//   # /etc/pltrun.toml
//   max-restarts = 3
//   term-timeout = 60
//   export = ["NCCL_DEBUG", "HF_HOME"]     # an array: one value each (-x), else "a,b"
//
//   [rdzv-conf]                            # the one table: --rdzv-conf's KEY=VALUE pairs
//   join_timeout = 900                     # rdzv-conf = "join_timeout=900,secret_file=..."
//   secret_file = "/etc/pltrun/secret"
//
// The file is $PLTRUN_CONFIG when that is set (set and empty: no file), else
// /etc/pltrun.toml when it exists. A flag on the command line wins over its PET_* variable,
// which wins over the file: the file only fills what both left out, and leaves out what the
// job said another way (the job's --devices drops the file's nproc-per-node). Options that
// place one job (nnodes, hosts, rdzv-endpoint, ...) are refused in it; the driver's own
// (ssh-port, remote-command, ...) apply only to runs with --hosts/--hostfile.
//
// The file is TOML 1.0, read by toml++ (site_config_file.h): every kind of string and its
// escapes, integers, floats, booleans, arrays of them. A key given twice, an unterminated
// string, anything else that is not TOML is refused. Tables: [rdzv-conf] (or
// rdzv-conf.KEY = ..., or an inline table) is rdzv-conf's pairs, because that option is
// itself a table of settings; any other [section] or dotted key is refused, as sections have
// nothing to select (a per-host or per-job value is what flags and PET_* are for) and a
// key read from a section pltrun ignored would look applied when it is not. Dates and arrays
// of arrays or tables are no option's value and refused. Every error is one line naming the
// file, the line and column, and the key: "site config /etc/pltrun.toml:3:16: 'max-restarts':
// ...".

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/plan/file_reader.h"
#include "launcher/plan/worker_env.h"
#include "pltrun/error.h"

namespace pltrun {

constexpr const char* kSiteConfigPath = "/etc/pltrun.toml";

/// The options a site file set ("--max-restarts", ...), and the file.
struct SiteSettings {
  struct Setting {
    std::string option;  ///< "--max-restarts"
    std::string place;   ///< where its value is: "/etc/pltrun.toml:2:16"
  };
  std::string path;
  bool read = false;  ///< a file was there and read
  std::vector<Setting> options;

  /// True when the file set `option` ("--auto-select-gpus").
  bool sets(const std::string& option) const {
    for (const Setting& setting : options) {
      if (setting.option == option) return true;
    }
    return false;
  }
};

/// After the command line and the PET_* variables: sets each option of `app` that is still
/// unset from the site file's key of the same name (max-restarts or max_restarts; a TOML
/// array is joined with commas). Throws Error(InvalidArgument) naming the file, line, column
/// and key for what is not TOML, a key that is no option, a [section] other than
/// [rdzv-conf], a value the option refuses, two keys for one option (max-restarts and
/// max_restarts), a NUL in a string; naming the file for one named by $PLTRUN_CONFIG that
/// cannot be read, and for one `readFile` refuses as another user's (readOwnFileFromDisk).
/// Returns what it set, so that a value the plan refuses later can be traced to the file.
/// `exists` is asked first about the default path, which most machines lack.
SiteSettings applySiteConfig(CLI::App& app, const Environment& env, const FileReader& readFile,
                             const FileProbe& exists);

/// The file's value of `key` ("rdzv-conf"), for commands other than the launch itself
/// (`pltrun status` takes the agents' rdzv-conf from it); none without a file or the key.
std::optional<std::string> siteConfigValue(const std::string& key, const Environment& env, const FileReader& readFile,
                                           const FileProbe& exists);

/// Whether `message` names `option` ("--nnodes"), not just a longer one ("--nnodes-foo").
bool namesOption(const std::string& message, const std::string& option);

/// `error`, with " (set in site config PATH:LINE:COLUMN)" when it names an option the file set.
Error tracedToSiteConfig(const Error& error, const SiteSettings& settings);

}  // namespace pltrun
