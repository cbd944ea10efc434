#pragma once
// Whether another local user could have written a file pltrun is about to act on: a secret
// file, or what pltrun reads because of where it runs (a hostfile, ./.deepspeed_env, the
// site config, an env file). ssh's rule for private keys: the file must be yours or root's,
// and writable by no one else. One check, so that every such file is judged alike.

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

namespace pltrun {

/// A file mode as ls and chmod write it: "0664".
inline std::string octalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

/// The login name of `uid` from the user database; none when it has no entry.
inline std::optional<std::string> userName(uid_t uid) {
  struct passwd entry {};
  struct passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(uid, &entry, buffer, sizeof buffer, &found) != 0 || found == nullptr) return std::nullopt;
  return std::string(found->pw_name);
}

/// The owner as a message names it: "pltrun-other1 (uid 999)", or "uid 999" without a name.
inline std::string userText(uid_t uid) {
  const std::string number = "uid " + std::to_string(uid);
  const std::optional<std::string> name = userName(uid);
  return name ? *name + " (" + number + ")" : number;
}

/// The owners pltrun trusts: the user it runs as, and root (who could change anything anyway).
inline bool ownedByYouOrRoot(const struct stat& status) { return status.st_uid == geteuid() || status.st_uid == 0; }

/// A directory in which others may delete or rename your files: group- or world-writable
/// without the sticky bit (which /tmp and /run/lock have).
inline bool othersCanUnlinkIn(const struct stat& directory) {
  return (directory.st_mode & 022) != 0 && (directory.st_mode & S_ISVTX) == 0;
}

/// Why another user could change the file `status` describes, as the end of a sentence whose
/// subject is the file ("belongs to pltrun-other1 (uid 999)", "is writable by group or
/// others (mode 0666)"), or nothing when only you or root can.
inline std::optional<std::string> othersCanChange(const struct stat& status) {
  if (!ownedByYouOrRoot(status)) return "belongs to " + userText(status.st_uid);
  if ((status.st_mode & 022) != 0) return "is writable by group or others (mode " + octalMode(status.st_mode) + ")";
  return std::nullopt;
}

/// Why another user could put a file of their own in place of one in `directory` (it is
/// theirs, or group- or world-writable without the sticky bit, as /tmp has), or nothing.
/// Only this directory is judged, not the ones above it.
inline std::optional<std::string> othersCanReplaceIn(const std::string& directory) {
  struct stat status {};
  if (::stat(directory.c_str(), &status) != 0) return std::nullopt;  // reading the file says what is wrong
  if (!ownedByYouOrRoot(status)) return "is in " + directory + ", which belongs to " + userText(status.st_uid);
  if (othersCanUnlinkIn(status)) {
    return "is in " + directory + ", which others can write without the sticky bit (mode " + octalMode(status.st_mode) +
           "), so they can swap it";
  }
  return std::nullopt;
}

}  // namespace pltrun
