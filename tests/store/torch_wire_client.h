#pragma once
// A torch 2.x TCPStore client for the commands torch 2.8 added, written from torch's
// TCPStore.cpp (queuePush, queuePop, queueLen, barrier, doWait) byte by byte, without
// pltrun's codec: Debian's torch is built without libuv and its client refuses queues
// ("queues not implemented on legacy TCPStore backend"), so this is what stands in for
// torch >= 2.8 with libuv; and it can hold many barrier participants in one test.
//
// Like torch's client it adds the "/" prefix to every key, opens with VALIDATE and PING,
// and pops with block=true as WAIT on the queue's name, then QUEUE_POP; a WAIT that times
// out sends CANCEL_WAIT and reads WAIT_CANCELED (after a STOP_WAITING that crossed it).

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "store/raw_connection.h"

namespace pltrun::test {

class TorchWireClient {
 public:
  /// Thrown where torch raises DistQueueEmptyError ("queue is empty") or a wait timeout.
  struct QueueEmpty {};
  struct WaitTimedOut {};

  explicit TorchWireClient(int port) : connection_(port) {
    send(byte(0x00) + u32(0x3C85F7CE));  // VALIDATE
    send(byte(0x0D) + u32(1234));        // PING
    expect(receiveU32() == 1234, "PING answered with another nonce");
  }

  void push(const std::string& queue, const std::string& item) {
    send(byte(0x0E) + text("/" + queue) + text(item));  // QUEUE_PUSH: no reply
  }

  /// torch's queue_pop(key, block): throws QueueEmpty for an empty queue, WaitTimedOut when
  /// a blocking pop waited `timeout` for nothing.
  std::string pop(const std::string& queue, bool block, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    if (block) wait(queue, timeout);
    send(byte(0x0F) + text("/" + queue));  // QUEUE_POP
    if (receiveI64() <= 0) throw QueueEmpty{};
    return receiveText();
  }

  std::int64_t length(const std::string& queue) {
    send(byte(0x10) + text("/" + queue));  // QUEUE_LEN
    return receiveI64();
  }

  /// torch's barrier(key, world_size, timeout): BARRIER, then STOP_WAITING once
  /// `worldSize` clients have arrived; on timeout CANCEL_WAIT, and WaitTimedOut.
  void barrier(const std::string& key, std::int64_t worldSize,
               std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    send(byte(0x12) + text("/" + key) + i64(worldSize));
    awaitStopWaiting(timeout);
  }
  /// BARRIER without waiting for its answer (a participant that is still waiting).
  void arrive(const std::string& key, std::int64_t worldSize) { send(byte(0x12) + text("/" + key) + i64(worldSize)); }
  /// STOP_WAITING within `timeout`, else CANCEL_WAIT and WaitTimedOut.
  void awaitStopWaiting(std::chrono::milliseconds timeout) {
    if (readableWithin(timeout)) {
      expect(receiveByte() == 0, "answered with something else than STOP_WAITING");
      return;
    }
    send(byte(0x0C));  // CANCEL_WAIT
    std::uint8_t reply = receiveByte();
    if (reply == 0) reply = receiveByte();  // a STOP_WAITING that crossed the cancel
    expect(reply == 1, "CANCEL_WAIT answered with something else than WAIT_CANCELED");
    throw WaitTimedOut{};
  }

  /// CHECK on the queue's name: READY (0) when it holds an item.
  bool check(const std::string& queue) {
    send(byte(0x05) + u64(1) + text("/" + queue));
    return receiveByte() == 0;
  }

  /// GETNUMKEYS: torch counts keys only, never queues.
  std::int64_t keyCount() {
    send(byte(0x07));
    return receiveI64();
  }

  RawConnection& connection() { return connection_; }

 private:
  void wait(const std::string& queue, std::chrono::milliseconds timeout) {
    send(byte(0x06) + u64(1) + text("/" + queue));  // WAIT
    awaitStopWaiting(timeout);
  }

  bool readableWithin(std::chrono::milliseconds timeout) {
    pollfd descriptor{connection_.fd(), POLLIN, 0};
    return poll(&descriptor, 1, static_cast<int>(timeout.count())) == 1;
  }

  // Exceptions, not Catch assertions: the client also runs on threads of its own.
  static void expect(bool condition, const char* what) {
    if (!condition) throw std::runtime_error(what);
  }
  void send(const std::string& bytes) { expect(connection_.send(bytes), "the store closed the connection"); }
  std::string receiveExactly(size_t size) {
    std::string bytes = connection_.receive(size);
    expect(bytes.size() == size, "the store closed the connection (or did not answer in 5 s)");
    return bytes;
  }
  std::uint8_t receiveByte() { return static_cast<std::uint8_t>(receiveExactly(1)[0]); }
  std::uint32_t receiveU32() { return little<std::uint32_t>(receiveExactly(4)); }
  std::int64_t receiveI64() { return little<std::int64_t>(receiveExactly(8)); }
  std::string receiveText() { return receiveExactly(static_cast<size_t>(little<std::uint64_t>(receiveExactly(8)))); }

  template <typename Integer>
  static Integer little(const std::string& bytes) {
    Integer value;
    std::memcpy(&value, bytes.data(), sizeof value);  // x86 and aarch64: little-endian, as torch sends
    return value;
  }
  static std::string byte(std::uint8_t value) { return std::string(1, static_cast<char>(value)); }
  static std::string u32(std::uint32_t value) { return std::string(reinterpret_cast<const char*>(&value), 4); }
  static std::string i64(std::int64_t value) { return std::string(reinterpret_cast<const char*>(&value), 8); }
  static std::string u64(std::uint64_t value) { return std::string(reinterpret_cast<const char*>(&value), 8); }
  static std::string text(const std::string& value) { return u64(value.size()) + value; }

  RawConnection connection_;
};

}  // namespace pltrun::test
