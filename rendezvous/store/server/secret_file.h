#pragma once
// The rendezvous's shared secret, read from a file only its owner can read: the one way a
// secret reaches pltrun and pltrun-store (never a command line, where `ps` shows it to
// every user of the machine).

#include <string>

namespace pltrun::rdzv {

/// A secret shorter than this is refused: an eavesdropper who saw one handshake could
/// guess it offline.
constexpr size_t kMinimumSecretSize = 16;

/// Reads the secret in `path` (its trailing newline dropped), or from standard input for
/// "-" (how the multi-host driver hands a job's secret to remote agents). Throws
/// Error(InvalidArgument), naming `origin` (the flag or variable that gave the path) and
/// saying what to do, for a file that is missing, not a regular file, readable or writable
/// by group or others, owned by another user (root excepted), over 64 KiB, or holding
/// fewer than `minimumSize` bytes (a password someone else chose, like etcd's, may be shorter).
std::string readSecretFile(const std::string& path, const std::string& origin, size_t minimumSize = kMinimumSecretSize);

}  // namespace pltrun::rdzv
