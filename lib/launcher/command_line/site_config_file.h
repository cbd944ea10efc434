#pragma once
// The site config file read as TOML 1.0 (toml++): its top-level keys in the order written,
// each with its values as the text an option takes and the place it was written. What the
// file may hold is described in site_config.h; which key is an option is decided there.

#include <string>
#include <vector>

namespace pltrun {

/// One top-level key of the file.
struct SiteEntry {
  std::string key;                  ///< as written: max_restarts or max-restarts
  std::vector<std::string> values;  ///< one for a value, one per element of an array
  std::string keyPlace;             ///< "PATH:LINE:COLUMN" of the key
  std::string valuePlace;           ///< of its value ([rdzv-conf]: of the header)
};

/// The entries of `text`, the file at `path`. Throws Error(InvalidArgument), one line
/// "site config PATH:LINE:COLUMN: 'KEY': ..." (the key where there is one), for what is not
/// TOML 1.0 (an unterminated string, a key given twice, ...) and for what no option takes:
/// a table other than rdzv-conf, a date, an array inside an array.
std::vector<SiteEntry> readSiteEntries(const std::string& text, const std::string& path);

/// Error(InvalidArgument) "site config PLACE: WHY", PLACE being the file or a place in it.
[[noreturn]] void throwSiteConfigError(const std::string& place, const std::string& why);

}  // namespace pltrun
