#pragma once
// The rendezvous flags' values, parsed strictly and in torchrun's forms: --nnodes N or
// MIN:MAX, --rdzv-backend, --rdzv-endpoint HOST[:PORT] and --rdzv-conf KEY=VALUE,...
// Pure functions; every error is Error(InvalidArgument) with one line naming the flag.

#include <string>
#include <vector>

#include "base/endpoint.h"
#include "launcher/plan/launch_config.h"
#include "launcher/plan/worker_env.h"

namespace pltrun {

/// torchrun's default port of the c10d rendezvous endpoint.
constexpr int kDefaultRendezvousPort = 29400;
/// etcd's default client port.
constexpr int kDefaultEtcdPort = 2379;

/// `host`, `host:port`, `[v6addr]:port`, `[v6addr]` or a bare IPv6 address like `::1` (more
/// than one colon and no brackets: the whole text is the host, and there is no port).
/// `defaultPort` is returned when the text has no port (any int; -1 lets a caller tell).
/// Spaces around the text are ignored. `flag` names the flag in errors.
Endpoint parseEndpoint(const std::string& flag, const std::string& text, int defaultPort);

/// A parsed --nnodes.
struct NodeRange {
  int minNodes = 1;
  int maxNodes = 1;
};

/// "N" (MIN = MAX = N) or "MIN:MAX", with 1 <= MIN <= MAX <= 100000.
NodeRange parseNodeRange(const std::string& flag, const std::string& text);

/// "static", "c10d" or "etcd" (v3); etcd-v2 is rejected, its API is gone from etcd.
RendezvousBackend parseRendezvousBackend(const std::string& flag, const std::string& text);

/// The etcd members of --rdzv-endpoint: "HOST[:PORT],HOST[:PORT],..." (each in
/// parseEndpoint's forms, the port 2379 when none is given).
std::vector<Endpoint> parseEtcdMembers(const std::string& flag, const std::string& text);

/// --rdzv-conf: comma-separated KEY=VALUE pairs applied on top of `settings`. A comma ends a
/// pair only where KEY= (or the end) follows it, so a value may hold commas
/// (secret_file=/p/a,b; expected_hosts=a,b,c); a value in double quotes may hold anything,
/// a backslash keeping " and \ (secret_file="/p/x,y=z"). Keys not named
/// keep their value; empty items, as after a trailing comma, are skipped; a repeated key:
/// the last wins). Keys: join_timeout (alias timeout), last_call_timeout, close_timeout,
/// keep_alive_interval (alias heartbeat_timeout), read_timeout: seconds > 0, decimals
/// allowed; keep_alive_max_attempt: a positive integer; is_host: true/false, 1/0, yes/no
/// (also t/f, y/n; any case); use_libuv and store_type: accepted and ignored (they tune
/// torch's own store). etcd's: protocol (http or https), cacert, cert, key, etcd_prefix (a key
/// prefix starting with /), user, password_file. Any other key is an error listing the accepted ones.
void applyRendezvousConf(const std::string& text, RendezvousSettings& settings);

/// KEY=VALUE as --rdzv-conf text that applyRendezvousConf reads back to `value`: the value
/// in double quotes, " and \ escaped, when it holds what would end or change it (a comma
/// that KEY= follows, a quote, a backslash, blanks at either end).
std::string rendezvousConfPair(const std::string& key, const std::string& value);

/// The c10d keys of `settings` as --rdzv-conf text that applyRendezvousConf reads back to the
/// same values (how the driver configures its agents): is_host (when decided), secret_file
/// (when given), the five times in seconds with milliseconds kept, keep_alive_max_attempt,
/// then node_name and expected_hosts (when given), each written by rendezvousConfPair.
std::string rendezvousConfText(const RendezvousSettings& settings);

/// No secret_file given: $PLTRUN_SECRET_FILE's, as the agents and `pltrun status` both take it.
void applySecretFileDefault(const Environment& env, RendezvousSettings& settings);

}  // namespace pltrun
