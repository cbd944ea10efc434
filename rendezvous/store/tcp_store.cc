#include "pltrun/tcp_store.h"

#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "base/seconds_text.h"
#include "pltrun/error.h"
#include "rendezvous/store/socket_stream.h"
#include "rendezvous/store/store_auth.h"
#include "rendezvous/store/store_errors.h"
#include "rendezvous/store/store_protocol.h"

namespace pltrun {

using detail::Clock;
using detail::SocketStream;
using rdzv::Command;
using rdzv::Request;

namespace {

// The largest value a reply may carry: far above what a rendezvous or torch's own keys hold
// (the pltrun-store's default value limit is smaller still), far below what would exhaust
// memory on a claim alone.
constexpr std::uint64_t kMaxReplyBytes = 1ull << 30;
// Replies are read this much at a time, the buffer growing only as bytes arrive.
constexpr std::uint64_t kReplyChunkBytes = 1ull << 20;

Request request(Command command, std::vector<std::string> keys = {}, std::vector<std::string> values = {},
                std::int64_t number = 0) {
  Request built;
  built.command = command;
  built.keys = std::move(keys);
  built.values = std::move(values);
  built.number = number;
  return built;
}

}  // namespace

struct TcpStore::Impl {
  TcpStoreOptions options;
  rdzv::Dialect dialect;
  SocketStream socket;
  std::mutex mutex;  // one request at a time per connection, as the protocol requires
  std::mt19937 random{std::random_device{}()};

  explicit Impl(TcpStoreOptions given)
      : options(std::move(given)),
        dialect(options.dialect == StoreDialect::Torch2 ? rdzv::Dialect::Torch2 : rdzv::Dialect::Torch113) {}

  std::string endpoint() const { return options.host + ":" + std::to_string(options.port); }

  std::string wireKey(const std::string& key) const { return options.keyPrefix + key; }
  std::vector<std::string> wireKeys(const std::vector<std::string>& keys) const {
    std::vector<std::string> result;
    result.reserve(keys.size());
    for (const std::string& key : keys) result.push_back(wireKey(key));
    return result;
  }

  // Connects with exponential back-off and jitter, then says hello as torch's client does.
  void connect() {
    const auto start = Clock::now();
    const auto deadline = start + options.connectTimeout;
    auto backoff = std::chrono::milliseconds(10);
    std::string why;
    while (true) {
      // A request not even acknowledged within the reply timeout has failed anyway: the
      // agents' watcher, whose timeout is short, so learns of a cut-off store in time to
      // fence its workers.
      why = socket.tryConnect(options.host, options.port, deadline, options.timeout);
      if (why.empty()) break;
      const auto now = Clock::now();
      if (now >= deadline) {
        throw Error(ErrorCode::Network, "cannot connect to the store at " + endpoint() + " after " +
                                            secondsText(now - start) + " s: " + why +
                                            " (is the store running and the address reachable?)");
      }
      if (options.betweenAttempts)
        options.betweenAttempts(std::chrono::duration_cast<std::chrono::milliseconds>(now - start));
      // Keep trying until the deadline itself, the last pause cut short to end there.
      std::uniform_real_distribution<double> jitter(0.5, 1.5);
      auto pause = std::chrono::duration_cast<Clock::duration>(backoff * jitter(random));
      std::this_thread::sleep_for(std::min(pause, deadline - now));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
    if (dialect == rdzv::Dialect::Torch2) send(request(Command::Validate, {}, {}, rdzv::kValidationMagic), "VALIDATE");
    if (!options.secret.empty()) authenticate();
  }

  // Mutual: the store proves the secret over our nonce and its own before we send our
  // proof, so a process squatting on the port, or a store of another job, learns nothing
  // and is refused (store_auth.h).
  void authenticate() {
    rdzv::Handshake handshake;
    handshake.clientNonce = rdzv::randomBytes(rdzv::kAuthNonceSize);
    handshake.context = options.authContext;
    send(request(Command::AuthHello, {handshake.context}, {handshake.clientNonce}), "authentication");
    std::string answer(rdzv::kAuthNonceSize + rdzv::kAuthDigestSize, '\0');
    const auto status = socket.readExact(answer.data(), answer.size(), deadlineFor(options.timeout));
    if (status != SocketStream::Status::Ok) {
      socket.close();
      throw Error(status == SocketStream::Status::Timeout ? ErrorCode::Timeout : ErrorCode::PermissionDenied,
                  "the store at " + endpoint() + " did not prove our shared secret" +
                      (status == SocketStream::Status::Timeout
                           ? " (no answer in time)"
                           : " (it closed the connection: it has no secret or another one, serves another run, "
                             "or is not a pltrun store)"));
    }
    handshake.serverNonce = answer.substr(0, rdzv::kAuthNonceSize);
    const rdzv::Digest claimed = rdzv::digestOf(std::string_view(answer).substr(rdzv::kAuthNonceSize));
    if (!rdzv::digestsEqual(claimed, rdzv::serverProof(options.secret, handshake))) {
      socket.close();
      throw Error(ErrorCode::PermissionDenied, "the store at " + endpoint() +
                                                   " could not prove our shared secret: it is not this job's store "
                                                   "(another secret, or another program on the port)");
    }
    const rdzv::Digest proof = rdzv::clientProof(options.secret, handshake);
    send(request(Command::AuthProof, {}, {std::string(proof.begin(), proof.end())}), "authentication");
    std::uint8_t accepted = 0;
    if (socket.readExact(&accepted, 1, deadlineFor(options.timeout)) != SocketStream::Status::Ok ||
        accepted != rdzv::kAuthAccepted) {
      socket.close();
      throw Error(ErrorCode::PermissionDenied, "the store at " + endpoint() + " refused our shared secret");
    }
  }

  void ensureConnected() {
    if (!socket.connected()) connect();
  }

  Clock::time_point deadlineFor(Duration timeout) const { return detail::deadlineAfter(timeout); }

  [[noreturn]] void fail(SocketStream::Status status, const std::string& what) {
    std::string reason = status == SocketStream::Status::Closed    ? "the store closed the connection"
                         : status == SocketStream::Status::Timeout ? "no reply in time"
                                                                   : socket.lastError();
    socket.close();  // the stream is out of step now; the next call reconnects
    throw Error(status == SocketStream::Status::Timeout ? ErrorCode::Timeout : ErrorCode::Network,
                "store " + endpoint() + ": " + what + " failed: " + reason);
  }

  void send(const Request& built, const std::string& what) {
    auto status = socket.writeAll(rdzv::encodeRequest(dialect, built), deadlineFor(options.timeout));
    if (status != SocketStream::Status::Ok) fail(status, what);
  }

  void receive(void* out, size_t size, const std::string& what, Clock::time_point deadline) {
    auto status = socket.readExact(out, size, deadline);
    if (status != SocketStream::Status::Ok) fail(status, what);
  }

  template <typename Integer>
  Integer receiveInteger(const std::string& what) {
    Integer value{};
    receive(&value, sizeof value, what, deadlineFor(options.timeout));
    return value;
  }

  // A reply's claimed size is the peer's word: over kMaxReplyBytes it is refused, and below
  // that the buffer grows with the bytes that actually arrive, so a claim alone costs nothing.
  std::string receiveBytes(const std::string& what) {
    auto size = receiveInteger<std::uint64_t>(what);
    if (size > kMaxReplyBytes) {
      socket.close();
      throw Error(ErrorCode::Protocol, "store " + endpoint() + ": " + what + ": a reply of " + std::to_string(size) +
                                           " bytes is over the client's limit of " + std::to_string(kMaxReplyBytes) +
                                           "; is this a TCPStore of the right dialect?");
    }
    const auto deadline = deadlineFor(options.timeout);
    std::string bytes;
    while (bytes.size() < size) {
      const size_t chunk = std::min<std::uint64_t>(size - bytes.size(), kReplyChunkBytes);
      const size_t at = bytes.size();
      bytes.resize(at + chunk);
      receive(bytes.data() + at, chunk, what, deadline);
    }
    return bytes;
  }

  // WAIT with a timeout: 2.x cancels on the server; 1.13 cannot, so the connection is
  // dropped (a late reply would put it out of step) and re-made by the next call.
  void wait(const std::vector<std::string>& keys, Duration timeout) {
    const auto start = Clock::now();
    send(request(Command::Wait, wireKeys(keys)), "WAIT " + detail::describeKeys(keys));
    std::uint8_t reply = 0;
    auto status = socket.readExact(&reply, 1, detail::deadlineAfter(timeout));
    if (status == SocketStream::Status::Ok) {
      if (reply != rdzv::kWaitStop) fail(SocketStream::Status::Failed, "WAIT (unexpected reply)");
      return;
    }
    if (status != SocketStream::Status::Timeout) fail(status, "WAIT " + detail::describeKeys(keys));
    if (dialect == rdzv::Dialect::Torch2) {
      // No answer to CANCEL_WAIT means the store is gone, not that the keys are missing:
      // that is a network failure, never a Timeout the caller would take for "not yet".
      try {
        send(request(Command::CancelWait), "CANCEL_WAIT");
        reply = receiveInteger<std::uint8_t>("CANCEL_WAIT");
        if (reply == rdzv::kWaitStop) reply = receiveInteger<std::uint8_t>("CANCEL_WAIT");
      } catch (const Error& error) {
        if (error.code() != ErrorCode::Timeout) throw;
        throw Error(ErrorCode::Network, error.what());
      }
      if (reply != rdzv::kWaitCanceled) fail(SocketStream::Status::Failed, "CANCEL_WAIT (unexpected reply)");
    } else {
      socket.close();
    }
    throw detail::waitTimeout(keys, "the store at " + endpoint(),
                              std::chrono::duration_cast<Duration>(Clock::now() - start));
  }
};

TcpStore::TcpStore(TcpStoreOptions options)
    : Store(options.timeout), impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->connect();
}

TcpStore::~TcpStore() = default;

std::string TcpStore::endpoint() const { return impl_->endpoint(); }

void TcpStore::set(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->send(request(Command::Set, {impl_->wireKey(key)}, {value}), "SET '" + key + "'");
}

void TcpStore::setEphemeral(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->send(request(Command::SetEphemeral, {impl_->wireKey(key)}, {value}), "SET_EPHEMERAL '" + key + "'");
}

void TcpStore::setCloseNotice(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (key.empty()) {
    // A new connection holds no notice: nothing to clear while disconnected. On the wire
    // the empty key clears, so it travels without the key prefix.
    if (!impl_->socket.connected()) return;
    impl_->send(request(Command::OnCloseSet, {std::string()}, {std::string()}), "ON_CLOSE_SET (clear)");
    return;
  }
  impl_->ensureConnected();
  impl_->send(request(Command::OnCloseSet, {impl_->wireKey(key)}, {value}), "ON_CLOSE_SET '" + key + "'");
}

std::string TcpStore::get(const std::string& key, Duration timeout) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->wait({key}, timeout);  // torch's clients wait first too: GET itself never blocks there
  impl_->send(request(Command::Get, {impl_->wireKey(key)}), "GET '" + key + "'");
  return impl_->receiveBytes("GET '" + key + "'");
}

std::int64_t TcpStore::add(const std::string& key, std::int64_t delta) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->send(request(Command::Add, {impl_->wireKey(key)}, {}, delta), "ADD '" + key + "'");
  return impl_->receiveInteger<std::int64_t>("ADD '" + key + "'");
}

std::string TcpStore::compareSet(const std::string& key, const std::string& expected, const std::string& desired) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->send(request(Command::CompareSet, {impl_->wireKey(key)}, {expected, desired}), "COMPARE_SET '" + key + "'");
  return impl_->receiveBytes("COMPARE_SET '" + key + "'");
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->send(request(Command::Check, impl_->wireKeys(keys)), "CHECK");
  return impl_->receiveInteger<std::uint8_t>("CHECK") == rdzv::kCheckReady;
}

void TcpStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->wait(keys, timeout);
}

bool TcpStore::deleteKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->send(request(Command::DeleteKey, {impl_->wireKey(key)}), "DELETE_KEY '" + key + "'");
  return impl_->receiveInteger<std::int64_t>("DELETE_KEY '" + key + "'") > 0;
}

std::int64_t TcpStore::numKeys() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->send(request(Command::GetNumKeys), "GETNUMKEYS");
  return impl_->receiveInteger<std::int64_t>("GETNUMKEYS");
}

// torch 1.13 has no APPEND: Store's compare-and-set loop, as torch's own clients do there.
void TcpStore::append(const std::string& key, const std::string& value) {
  if (impl_->dialect != rdzv::Dialect::Torch2) return Store::append(key, value);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->send(request(Command::Append, {impl_->wireKey(key)}, {value}), "APPEND '" + key + "'");
}

// One WAIT for every key, then MULTI_GET; torch 1.13 has none: a GET of each key (Store's
// default would send a WAIT before each GET too).
std::vector<std::string> TcpStore::multiGet(const std::vector<std::string>& keys, Duration timeout) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->wait(keys, timeout);
  std::vector<std::string> values;
  if (impl_->dialect == rdzv::Dialect::Torch2) {
    impl_->send(request(Command::MultiGet, impl_->wireKeys(keys)), "MULTI_GET");
    for (size_t i = 0; i < keys.size(); ++i) values.push_back(impl_->receiveBytes("MULTI_GET"));
    return values;
  }
  for (const std::string& key : keys) {
    impl_->send(request(Command::Get, {impl_->wireKey(key)}), "GET '" + key + "'");
    values.push_back(impl_->receiveBytes("GET '" + key + "'"));
  }
  return values;
}

// torch 1.13 has no MULTI_SET: Store's SET of each key (none has a reply to wait for).
void TcpStore::multiSet(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  if (impl_->dialect != rdzv::Dialect::Torch2) return Store::multiSet(keys, values);
  detail::requireOneValuePerKey(keys, values);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  impl_->send(request(Command::MultiSet, impl_->wireKeys(keys), values), "MULTI_SET");
}

void TcpStore::ping() {
  if (impl_->dialect == rdzv::Dialect::Torch113) {  // no PING in 1.13: any round trip will do
    numKeys();
    return;
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ensureConnected();
  std::uint32_t nonce = impl_->random();
  impl_->send(request(Command::Ping, {}, {}, nonce), "PING");
  if (impl_->receiveInteger<std::uint32_t>("PING") != nonce) {
    impl_->socket.close();  // out of step with whatever answered
    throw Error(ErrorCode::Protocol,
                "store " + impl_->endpoint() + ": PING: the reply is not the echo a TCPStore sends");
  }
}

}  // namespace pltrun
