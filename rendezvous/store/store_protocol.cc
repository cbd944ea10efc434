#include "rendezvous/store/store_protocol.h"

#include <array>
#include <cstring>

namespace pltrun::rdzv {
namespace {

constexpr std::uint8_t kExtensionBase = 0xA0;  // pltrun's own commands, in both dialects
constexpr const char* kWrongMagic = "VALIDATE with a wrong magic number (not a torch 2.x TCPStore client)";

// Command byte -> command, per dialect; the index is the byte.
constexpr std::array<Command, 19> kTorch2Commands = {
    Command::Validate, Command::Set,      Command::CompareSet, Command::Get,       Command::Add,
    Command::Check,    Command::Wait,     Command::GetNumKeys, Command::DeleteKey, Command::Append,
    Command::MultiGet, Command::MultiSet, Command::CancelWait, Command::Ping,      Command::QueuePush,
    Command::QueuePop, Command::QueueLen, Command::ListKeys,   Command::Barrier};
constexpr std::array<Command, 9> kTorch113Commands = {Command::Set,        Command::CompareSet, Command::Get,
                                                      Command::Add,        Command::Check,      Command::Wait,
                                                      Command::GetNumKeys, Command::WatchKey,   Command::DeleteKey};
constexpr std::array<Command, 4> kExtensionCommands = {Command::AuthHello, Command::AuthProof, Command::SetEphemeral,
                                                       Command::OnCloseSet};

std::optional<Command> commandFor(Dialect dialect, std::uint8_t byte) {
  if (byte >= kExtensionBase && byte - kExtensionBase < static_cast<int>(kExtensionCommands.size())) {
    return kExtensionCommands[byte - kExtensionBase];
  }
  if (dialect == Dialect::Torch2 && byte < kTorch2Commands.size()) return kTorch2Commands[byte];
  if (dialect == Dialect::Torch113 && byte < kTorch113Commands.size()) return kTorch113Commands[byte];
  return std::nullopt;
}

std::optional<std::uint8_t> byteFor(Dialect dialect, Command command) {
  for (size_t i = 0; i < kExtensionCommands.size(); ++i) {
    if (kExtensionCommands[i] == command) return static_cast<std::uint8_t>(kExtensionBase + i);
  }
  if (dialect == Dialect::Torch2) {
    for (size_t i = 0; i < kTorch2Commands.size(); ++i) {
      if (kTorch2Commands[i] == command) return static_cast<std::uint8_t>(i);
    }
  } else {
    for (size_t i = 0; i < kTorch113Commands.size(); ++i) {
      if (kTorch113Commands[i] == command) return static_cast<std::uint8_t>(i);
    }
  }
  return std::nullopt;
}

// Builds a request from fields RequestMeasure has found whole and within the limits (the
// measure is where the limits are enforced): it only never reads past the input's end. A
// read that runs short sets `short_`; later reads then do nothing.
class FieldReader {
 public:
  explicit FieldReader(std::string_view input) : input_(input) {}

  bool ok() const { return !short_; }
  size_t position() const { return position_; }

  template <typename Integer>
  Integer integer() {
    Integer value{};
    if (short_ || input_.size() - position_ < sizeof value) {
      short_ = true;
      return value;
    }
    std::memcpy(&value, input_.data() + position_, sizeof value);  // host order, as torch sends
    position_ += sizeof value;
    return value;
  }

  /// A length-prefixed key or value.
  std::string bytes() {
    const std::uint64_t size = integer<std::uint64_t>();
    return raw(size);
  }

  std::string raw(std::uint64_t size) {
    if (short_ || input_.size() - position_ < size) {
      short_ = true;
      return {};
    }
    std::string value(input_.substr(position_, size));
    position_ += size;
    return value;
  }

 private:
  std::string_view input_;
  size_t position_ = 0;
  bool short_ = false;
};

// The fields of each command's arguments, in order: `fixed`, then, after a COUNT among
// them, `repeated` once per counted item. One table for building (readArguments) and for
// measuring (RequestMeasure), so the two cannot disagree.
enum class Field : std::uint8_t { U32, I64, Key, Value, Count, Digest };

struct ArgumentLayout {
  std::vector<Field> fixed;
  std::vector<Field> repeated;  ///< empty unless `fixed` ends with a COUNT
};

const ArgumentLayout& layoutOf(Command command) {
  static const ArgumentLayout none{}, number{{Field::U32}, {}}, keyValue{{Field::Key, Field::Value}, {}},
      compareSet{{Field::Key, Field::Value, Field::Value}, {}}, key{{Field::Key}, {}},
      add{{Field::Key, Field::I64}, {}}, keys{{Field::Count}, {Field::Key}},
      pairs{{Field::Count}, {Field::Key, Field::Value}}, digest{{Field::Digest}, {}},
      hello{{Field::Digest, Field::Key}, {}};
  switch (command) {
    case Command::Validate:
    case Command::Ping:
      return number;
    case Command::Set:
    case Command::SetEphemeral:
    case Command::OnCloseSet:
    case Command::Append:
    case Command::QueuePush:
      return keyValue;
    case Command::CompareSet:
      return compareSet;
    case Command::Get:
    case Command::DeleteKey:
    case Command::WatchKey:
    case Command::QueuePop:
    case Command::QueueLen:
      return key;
    case Command::Add:
    case Command::Barrier:
      return add;
    case Command::Check:
    case Command::Wait:
    case Command::MultiGet:
      return keys;
    case Command::MultiSet:
      return pairs;
    case Command::AuthHello:
      return hello;
    case Command::AuthProof:
      return digest;
    default:
      return none;
  }
}

void readField(FieldReader& reader, Field field, Request& request, std::uint64_t& count) {
  switch (field) {
    case Field::U32:
      request.number = reader.integer<std::uint32_t>();
      break;
    case Field::I64:
      request.number = reader.integer<std::int64_t>();
      break;
    case Field::Key:
      request.keys.push_back(reader.bytes());
      break;
    case Field::Value:
      request.values.push_back(reader.bytes());
      break;
    case Field::Count:
      count = reader.integer<std::uint64_t>();
      break;
    case Field::Digest:
      request.values.push_back(reader.raw(kAuthDigestSize));
      break;
  }
}

void readArguments(FieldReader& reader, Request& request) {
  const ArgumentLayout& layout = layoutOf(request.command);
  std::uint64_t count = 0;
  for (Field field : layout.fixed) readField(reader, field, request, count);
  for (std::uint64_t i = 0; i < count && reader.ok(); ++i) {
    for (Field field : layout.repeated) readField(reader, field, request, count);
  }
}

}  // namespace

const char* commandName(Command command) {
  switch (command) {
    case Command::Validate:
      return "VALIDATE";
    case Command::Set:
      return "SET";
    case Command::CompareSet:
      return "COMPARE_SET";
    case Command::Get:
      return "GET";
    case Command::Add:
      return "ADD";
    case Command::Check:
      return "CHECK";
    case Command::Wait:
      return "WAIT";
    case Command::GetNumKeys:
      return "GETNUMKEYS";
    case Command::WatchKey:
      return "WATCH_KEY";
    case Command::DeleteKey:
      return "DELETE_KEY";
    case Command::Append:
      return "APPEND";
    case Command::MultiGet:
      return "MULTI_GET";
    case Command::MultiSet:
      return "MULTI_SET";
    case Command::CancelWait:
      return "CANCEL_WAIT";
    case Command::Ping:
      return "PING";
    case Command::QueuePush:
      return "QUEUE_PUSH";
    case Command::QueuePop:
      return "QUEUE_POP";
    case Command::QueueLen:
      return "QUEUE_LEN";
    case Command::ListKeys:
      return "LIST_KEYS";
    case Command::Barrier:
      return "BARRIER";
    case Command::AuthHello:
      return "AUTH_HELLO";
    case Command::AuthProof:
      return "AUTH_PROOF";
    case Command::SetEphemeral:
      return "SET_EPHEMERAL";
    case Command::OnCloseSet:
      return "ON_CLOSE_SET";
  }
  return "UNKNOWN";
}

std::optional<Dialect> detectDialect(std::string_view start) {
  if (start.empty()) return std::nullopt;
  auto first = static_cast<std::uint8_t>(start[0]);
  if (first >= kExtensionBase) return std::nullopt;  // shared by both dialects: decide later
  if (first != 0) return Dialect::Torch113;          // 2.x always opens with VALIDATE (0)
  if (start.size() < 5) return std::nullopt;
  std::uint32_t magic;
  std::memcpy(&magic, start.data() + 1, sizeof magic);
  // A 1.13 SET would need a key of about a gigabyte to start with these bytes.
  return magic == kValidationMagic ? Dialect::Torch2 : Dialect::Torch113;
}

bool hasReply(Command command) {
  switch (command) {
    case Command::Validate:
    case Command::Set:
    case Command::SetEphemeral:
    case Command::OnCloseSet:
    case Command::Append:
    case Command::MultiSet:
    case Command::QueuePush:
      return false;
    default:
      return true;
  }
}

namespace {

// The command of a request's first byte; nothing (with `result` Invalid or Unsupported and
// its error set) for a byte the dialect lacks or a command this server does not serve.
std::optional<Command> commandOfFirstByte(Dialect dialect, std::uint8_t byte, DecodeResult& result) {
  auto command = commandFor(dialect, byte);
  if (!command) {
    result.status = DecodeStatus::Invalid;
    result.error = "unknown command byte " + std::to_string(byte) + " for the torch " +
                   (dialect == Dialect::Torch2 ? "2.x" : "1.13") + " protocol";
    return std::nullopt;
  }
  switch (*command) {
    case Command::WatchKey:
      result.request.command = *command;
      result.status = DecodeStatus::Unsupported;
      result.error = std::string("command ") + commandName(*command) + " (" + std::to_string(byte) +
                     ") is not supported by pltrun's store";
      return std::nullopt;
    default:
      return command;
  }
}

// How one field measures, from `rest` (the input from the field's first byte): whole (its
// size; a COUNT's count; a key's or value's length), partial while some of it has not come,
// or refused. A length or count is checked against the limits as soon as it has come,
// before the bytes it announces.
struct FieldSize {
  enum class Kind { Whole, Partial, WrongMagic, OverLimit };
  Kind kind = Kind::Partial;
  size_t size = 0;
  std::uint64_t count = 0;
  std::uint64_t payload = 0;
  std::string error;
};

std::uint64_t readU64(std::string_view rest) {
  std::uint64_t value;
  std::memcpy(&value, rest.data(), sizeof value);
  return value;
}

FieldSize measureFixed(size_t size, std::string_view rest) {
  FieldSize result;
  if (rest.size() >= size) {
    result.kind = FieldSize::Kind::Whole;
    result.size = size;
  }
  return result;
}

FieldSize overLimit(std::string error) {
  FieldSize result;
  result.kind = FieldSize::Kind::OverLimit;
  result.error = std::move(error);
  return result;
}

FieldSize measureBytes(bool isKey, std::string_view rest, const ProtocolLimits& limits, std::uint64_t declared) {
  if (rest.size() < 8) return FieldSize{};
  const std::uint64_t length = readU64(rest);
  const std::uint64_t limit = isKey ? limits.maxKeySize : limits.maxValueSize;
  if (length > limit) {
    return overLimit(std::string(isKey ? "a key" : "a value") + " of " + std::to_string(length) +
                     " bytes is over the limit of " + std::to_string(limit));
  }
  if (declared + length > limits.maxRequestSize) {
    return overLimit("a request of more than " + std::to_string(limits.maxRequestSize) + " bytes is over the limit");
  }
  if (rest.size() - 8 < length) return FieldSize{};
  FieldSize result = measureFixed(8 + length, rest);
  result.payload = length;
  return result;
}

FieldSize measureField(Field field, Command command, std::string_view rest, const ProtocolLimits& limits,
                       std::uint64_t declared) {
  switch (field) {
    case Field::U32:
      if (command == Command::Validate && rest.size() >= 4) {
        std::uint32_t magic;
        std::memcpy(&magic, rest.data(), sizeof magic);
        if (magic != kValidationMagic) return FieldSize{FieldSize::Kind::WrongMagic, 0, 0, 0, ""};
      }
      return measureFixed(4, rest);
    case Field::I64:
      return measureFixed(8, rest);
    case Field::Digest:
      return measureFixed(kAuthDigestSize, rest);
    case Field::Count: {
      if (rest.size() < 8) return FieldSize{};
      const std::uint64_t count = readU64(rest);
      if (count > limits.maxKeysPerRequest) {
        return overLimit("a request for " + std::to_string(count) + " keys is over the limit of " +
                         std::to_string(limits.maxKeysPerRequest));
      }
      FieldSize result = measureFixed(8, rest);
      result.count = count;
      return result;
    }
    case Field::Key:
    case Field::Value:
      return measureBytes(field == Field::Key, rest, limits, declared);
  }
  return FieldSize{};
}

}  // namespace

RequestMeasure::RequestMeasure(const ProtocolLimits& limits) : limits_(limits) {}

DecodeStatus RequestMeasure::fail(std::string error) {
  status_ = DecodeStatus::Invalid;
  error_ = std::string(commandName(command_)) + ": " + std::move(error);
  return status_;
}

DecodeStatus RequestMeasure::advance(Dialect dialect, std::string_view pending) {
  if (status_ != DecodeStatus::NeedMore) return status_;
  if (position_ == 0 && !startRequest(dialect, pending)) return status_;
  const ArgumentLayout& layout = layoutOf(command_);
  for (;;) {
    Field field;
    if (fieldIndex_ < layout.fixed.size()) {
      field = layout.fixed[fieldIndex_];
    } else if (groupsLeft_ > 0) {
      field = layout.repeated[groupField_];
    } else {
      status_ = DecodeStatus::Complete;
      return status_;
    }
    const FieldSize measured = measureField(field, command_, pending.substr(position_), limits_, declared_);
    switch (measured.kind) {
      case FieldSize::Kind::Partial:
        return status_;
      case FieldSize::Kind::WrongMagic:
        status_ = DecodeStatus::Invalid;
        error_ = kWrongMagic;
        return status_;
      case FieldSize::Kind::OverLimit:
        return fail(measured.error);
      case FieldSize::Kind::Whole:
        break;
    }
    if (field == Field::Count) groupsLeft_ = measured.count;
    declared_ += measured.payload;
    position_ += measured.size;
    if (fieldIndex_ < layout.fixed.size()) {
      ++fieldIndex_;
    } else if (++groupField_ == layout.repeated.size()) {
      groupField_ = 0;
      --groupsLeft_;
    }
  }
}

// The first byte: a command this dialect serves, or a final status. False while it has not
// come, or when it is refused.
bool RequestMeasure::startRequest(Dialect dialect, std::string_view pending) {
  if (pending.empty()) return false;
  DecodeResult refused;
  std::optional<Command> command = commandOfFirstByte(dialect, static_cast<std::uint8_t>(pending[0]), refused);
  if (!command) {
    status_ = refused.status;
    error_ = refused.error;
    return false;
  }
  command_ = *command;
  position_ = 1;
  return true;
}

DecodeResult decodeRequest(Dialect dialect, std::string_view input, const ProtocolLimits& limits) {
  // First only measure (nothing copied while the request is incomplete), then build.
  RequestMeasure measure(limits);
  const DecodeStatus measured = measure.advance(dialect, input);
  if (measured == DecodeStatus::NeedMore) return DecodeResult{};
  if (measured != DecodeStatus::Complete) {
    DecodeResult refused;
    commandOfFirstByte(dialect, static_cast<std::uint8_t>(input[0]), refused);  // names an unsupported one
    if (measure.command()) refused.request.command = *measure.command();
    refused.status = measured;
    refused.error = measure.error();
    return refused;
  }
  return decodeMeasuredRequest(dialect, input.substr(0, measure.length()));
}

DecodeResult decodeMeasuredRequest(Dialect dialect, std::string_view request) {
  DecodeResult result;
  auto command = commandOfFirstByte(dialect, static_cast<std::uint8_t>(request[0]), result);
  if (!command) return result;
  result.request.command = *command;
  FieldReader reader(request.substr(1));
  readArguments(reader, result.request);
  if (!reader.ok() || 1 + reader.position() != request.size()) {  // not a request RequestMeasure found whole
    result.status = DecodeStatus::Invalid;
    result.error = std::string(commandName(*command)) + ": not one whole request";
    return result;
  }
  if (*command == Command::Validate && result.request.number != kValidationMagic) {
    result.status = DecodeStatus::Invalid;
    result.error = kWrongMagic;
    return result;
  }
  result.status = DecodeStatus::Complete;
  result.consumed = request.size();
  return result;
}

void appendU8(std::string& out, std::uint8_t value) { out.push_back(static_cast<char>(value)); }
void appendU32(std::string& out, std::uint32_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
void appendI64(std::string& out, std::int64_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
void appendU64(std::string& out, std::uint64_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
void appendBytes(std::string& out, std::string_view bytes) {
  appendU64(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

std::string encodeRequest(Dialect dialect, const Request& request) {
  std::string out;
  auto byte = byteFor(dialect, request.command);
  if (!byte) return out;  // the dialect has no such command: nothing can be sent
  appendU8(out, *byte);
  switch (request.command) {
    case Command::Validate:
    case Command::Ping:
      appendU32(out, static_cast<std::uint32_t>(request.number));
      break;
    case Command::Add:
    case Command::Barrier:
      appendBytes(out, request.keys.at(0));
      appendI64(out, request.number);
      break;
    case Command::Check:
    case Command::Wait:
    case Command::MultiGet:
      appendU64(out, request.keys.size());
      for (const std::string& key : request.keys) appendBytes(out, key);
      break;
    case Command::MultiSet:
      appendU64(out, request.keys.size());
      for (size_t i = 0; i < request.keys.size(); ++i) {
        appendBytes(out, request.keys[i]);
        appendBytes(out, request.values.at(i));
      }
      break;
    case Command::AuthProof:
      out += request.values.at(0);
      break;
    case Command::AuthHello:  // the nonce raw, then the context as a key
      out += request.values.at(0);
      appendBytes(out, request.keys.at(0));
      break;
    default:  // key(s) then value(s), each length-prefixed
      for (const std::string& key : request.keys) appendBytes(out, key);
      for (const std::string& value : request.values) appendBytes(out, value);
      break;
  }
  return out;
}

}  // namespace pltrun::rdzv
