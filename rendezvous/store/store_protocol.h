#pragma once
// PyTorch's TCPStore wire protocol (docs/TCPSTORE_PROTOCOL.md), as pure functions: no
// sockets, no allocation beyond the request being built. Two dialects share one request
// model: torch 2.x (VALIDATE first, commands up to PING) and torch 1.13 (Debian bookworm's
// python3-torch, its own numbering). pltrun's extensions (authentication, ephemeral keys,
// close notices) use command bytes outside both ranges, so torch clients never meet them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pltrun::rdzv {

enum class Dialect { Torch2, Torch113 };

/// Dialect-independent commands.
enum class Command {
  Validate,
  Set,
  CompareSet,
  Get,
  Add,
  Check,
  Wait,
  GetNumKeys,
  WatchKey,  ///< 1.13 only; refused
  DeleteKey,
  Append,
  MultiGet,
  MultiSet,
  CancelWait,
  Ping,
  QueuePush,     ///< 2.x (torch >= 2.7, libuv clients): key, value; no reply
  QueuePop,      ///< key -> i64 length before the pop, then the value when it was not 0
  QueueLen,      ///< key -> i64
  ListKeys,      ///< 2.x (torch >= 2.8, either server): -> i64 count, then each key
  Barrier,       ///< 2.x (torch >= 2.8): key, i64 world size -> STOP_WAITING once that many arrived
  AuthHello,     ///< pltrun: the client's nonce and context; the reply proves the server's secret
  AuthProof,     ///< pltrun: the client's proof (store_auth.h)
  SetEphemeral,  ///< pltrun: a key deleted when this connection closes
  OnCloseSet,    ///< pltrun: a key set (unless it exists) when this connection closes
};

const char* commandName(Command command);

struct Request {
  Command command = Command::Ping;
  std::vector<std::string> keys;
  /// SET/APPEND/SET_EPHEMERAL/ON_CLOSE_SET: 1; COMPARE_SET: expected, desired; MULTI_SET:
  /// one per key
  std::vector<std::string> values;
  std::int64_t number = 0;  ///< ADD delta; BARRIER world size; PING and VALIDATE u32 value
};

/// Bounds that keep one request from taking the server's memory.
struct ProtocolLimits {
  std::uint64_t maxKeySize = 64 * 1024;
  std::uint64_t maxValueSize = 64ull * 1024 * 1024;
  /// As torch's libuv server (131072): a MULTI_SET of a million pairs is refused on its count.
  std::uint64_t maxKeysPerRequest = 131072;
  /// A whole request: keys and values together (a MULTI_SET of many large values).
  std::uint64_t maxRequestSize = 256ull * 1024 * 1024;
  /// A whole reply (GET, MULTI_GET): a small request cannot ask for gigabytes.
  std::uint64_t maxReplySize = 128ull * 1024 * 1024;
};

/// torch 2.x's VALIDATE magic number.
constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;
/// Reply bytes of CHECK and WAIT/CANCEL_WAIT.
constexpr std::uint8_t kCheckReady = 0, kCheckNotReady = 1;
constexpr std::uint8_t kWaitStop = 0, kWaitCanceled = 1;
/// Reply to AUTH_PROOF when the proof is right (a wrong one closes the connection).
constexpr std::uint8_t kAuthAccepted = 1;

/// Which dialect a connection speaks, from the start of its first request: torch 2.x
/// always opens with VALIDATE (byte 0, then the magic as a little-endian u32), which no
/// valid 1.13 request starts with. Empty while more bytes are needed, or while the first
/// request is a pltrun extension that both dialects share.
std::optional<Dialect> detectDialect(std::string_view start);

enum class DecodeStatus { NeedMore, Complete, Invalid, Unsupported };

struct DecodeResult {
  DecodeStatus status = DecodeStatus::NeedMore;
  size_t consumed = 0;  ///< bytes of input the request used (Complete only)
  Request request;
  std::string error;  ///< why the input is not a valid or supported request
};

/// Decodes the first request in `input`. Never reads past `input`; NeedMore when the
/// request is not complete yet, Invalid for bytes no client of `dialect` sends or for
/// sizes over `limits`, Unsupported for a command this server does not serve (1.13's
/// WATCH_KEY).
DecodeResult decodeRequest(Dialect dialect, std::string_view input, const ProtocolLimits& limits);

/// Finds where one request ends while its bytes arrive, resuming where the last call
/// stopped: each byte is looked at once however many reads the request takes, where
/// decodeRequest alone measures from the request's start on every read (quadratic in the
/// request's size for a large MULTI_SET arriving in many reads). Applies the
/// same limits, in the same order, with the same errors, as decodeRequest; the server then
/// decodes the request once, from exactly length() bytes. One object per request.
class RequestMeasure {
 public:
  explicit RequestMeasure(const ProtocolLimits& limits);
  /// `pending` starts at the request's first byte and holds at least what earlier calls
  /// saw. NeedMore, Complete (the request is length() bytes), or Invalid / Unsupported
  /// (error()); a final status repeats on later calls.
  DecodeStatus advance(Dialect dialect, std::string_view pending);
  size_t length() const { return position_; }
  const std::string& error() const { return error_; }
  /// The request's command, once its first byte has been seen and is a served command.
  std::optional<Command> command() const { return position_ > 0 ? std::optional<Command>(command_) : std::nullopt; }

 private:
  DecodeStatus fail(std::string error);
  bool startRequest(Dialect dialect, std::string_view pending);

  const ProtocolLimits& limits_;
  DecodeStatus status_ = DecodeStatus::NeedMore;
  Command command_ = Command::Ping;
  size_t position_ = 0;           ///< bytes of whole fields measured (the command byte first)
  size_t fieldIndex_ = 0;         ///< fixed fields measured so far
  std::uint64_t groupsLeft_ = 0;  ///< repeated groups (a key, or a key and value) still to come
  size_t groupField_ = 0;         ///< fields of the current group measured so far
  std::uint64_t declared_ = 0;    ///< key and value bytes so far, against maxRequestSize
  std::string error_;
};

/// Builds the request that RequestMeasure found Complete: `request` is exactly its
/// length() bytes, so nothing is measured again, nor any limit checked (Invalid if it is
/// not one whole request).
DecodeResult decodeMeasuredRequest(Dialect dialect, std::string_view request);

/// The bytes a client of `dialect` sends for `request`.
std::string encodeRequest(Dialect dialect, const Request& request);

/// Reply pieces, as torch writes them: raw host-order (little-endian) integers, byte
/// strings as a u64 length then the bytes.
void appendU8(std::string& out, std::uint8_t value);
void appendU32(std::string& out, std::uint32_t value);
void appendI64(std::string& out, std::int64_t value);
void appendU64(std::string& out, std::uint64_t value);
void appendBytes(std::string& out, std::string_view bytes);

/// Whether the command expects a reply at all (SET, APPEND, MULTI_SET, QUEUE_PUSH, VALIDATE and pltrun's
/// SET_EPHEMERAL and ON_CLOSE_SET do not).
bool hasReply(Command command);

/// The length of AUTH_HELLO's nonce and of AUTH_PROOF's proof (raw bytes, no length).
constexpr size_t kAuthDigestSize = 32;

/// What a connection may send before it has authenticated: AUTH_HELLO's context is a run
/// id, not a 64 KiB key, so an unauthenticated client makes the server buffer at most
/// about 1 KiB.
inline constexpr ProtocolLimits kBeforeAuthenticationLimits = [] {
  ProtocolLimits limits;
  limits.maxKeySize = 1024;  // AUTH_HELLO's context
  limits.maxValueSize = 0;   // no command allowed before authentication carries a value
  limits.maxKeysPerRequest = 1;
  limits.maxRequestSize = 2048;
  limits.maxReplySize = 1024;
  return limits;
}();

}  // namespace pltrun::rdzv
