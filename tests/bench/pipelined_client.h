#pragma once
// A raw TCPStore client for store_bench --pipeline N: it sends N requests in one write and
// then reads the N replies, as many clients' worth of load on one connection. With
// one request at a time, a small machine is limited by the clients and the loopback
// stack, not by the server (docs/PERFORMANCE.md); pipelining makes the server's own cost
// per request visible. The protocol allows it: servers answer a connection's requests in
// order. Keys get torch's "/" prefix, as pltrun's TcpStore sends them.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "rendezvous/store/store_protocol.h"

namespace bench {

class PipelinedClient {
 public:
  PipelinedClient(int port, pltrun::rdzv::Dialect dialect) : dialect_(dialect) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("pipelined client: cannot connect to 127.0.0.1:" + std::to_string(port));
    }
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (dialect_ == pltrun::rdzv::Dialect::Torch2) {
      pltrun::rdzv::Request validate;
      validate.command = pltrun::rdzv::Command::Validate;
      validate.number = pltrun::rdzv::kValidationMagic;
      writeAll(pltrun::rdzv::encodeRequest(dialect_, validate));
    }
  }
  ~PipelinedClient() { close(fd_); }

  /// `depth` GETs of `key` (which must exist); checks every value's size.
  void getBatch(const std::string& key, size_t depth, size_t valueSize) {
    sendBatch(pltrun::rdzv::Command::Get, key, depth, 0);
    for (size_t i = 0; i < depth; ++i) {
      std::uint64_t size = readInteger<std::uint64_t>();
      if (size != valueSize) throw std::runtime_error("pipelined client: GET returned a wrong value");
      skip(size);
    }
  }

  /// `depth` ADDs of 1 to `key`.
  void addBatch(const std::string& key, size_t depth) {
    sendBatch(pltrun::rdzv::Command::Add, key, depth, 1);
    for (size_t i = 0; i < depth; ++i) readInteger<std::int64_t>();
  }

 private:
  void sendBatch(pltrun::rdzv::Command command, const std::string& key, size_t depth, std::int64_t number) {
    pltrun::rdzv::Request request;
    request.command = command;
    request.keys = {"/" + key};
    request.number = number;
    const std::string one = pltrun::rdzv::encodeRequest(dialect_, request);
    std::string batch;
    batch.reserve(one.size() * depth);
    for (size_t i = 0; i < depth; ++i) batch += one;
    writeAll(batch);
  }

  void writeAll(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t written = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (written <= 0) throw std::runtime_error("pipelined client: the server closed the connection");
      sent += static_cast<size_t>(written);
    }
  }

  void readExact(char* out, size_t size) {
    while (size > 0) {
      if (available_ == 0) fill();
      size_t take = std::min(size, available_);
      std::memcpy(out, buffer_ + start_, take);
      start_ += take;
      available_ -= take;
      out += take;
      size -= take;
    }
  }

  void skip(size_t size) {
    char scratch[256];
    while (size > 0) {
      size_t take = std::min(size, sizeof scratch);
      readExact(scratch, take);
      size -= take;
    }
  }

  template <typename Integer>
  Integer readInteger() {
    Integer value;
    readExact(reinterpret_cast<char*>(&value), sizeof value);
    return value;
  }

  // Buffered reads: one recv brings many replies, as the server's one write sends them.
  void fill() {
    ssize_t got = recv(fd_, buffer_, sizeof buffer_, 0);
    if (got <= 0) throw std::runtime_error("pipelined client: the server closed the connection");
    start_ = 0;
    available_ = static_cast<size_t>(got);
  }

  pltrun::rdzv::Dialect dialect_;
  int fd_ = -1;
  char buffer_[64 * 1024];
  size_t start_ = 0;
  size_t available_ = 0;
};

}  // namespace bench
