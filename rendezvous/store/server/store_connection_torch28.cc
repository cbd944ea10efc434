// The commands torch 2.8 added to the TCPStore protocol, which torch 2.14's client sends
// whichever server it talks to: LIST_KEYS (Store.list_keys) and BARRIER (Store.barrier).
// The queue commands, also 2.8's, are answered with the others in store_connection_requests.cc.

#include "rendezvous/store/server/store_connection.h"

namespace pltrun::rdzv {

// torch 2.8's LIST_KEYS: every key (its client keeps those under its own "/" prefix), sized
// before it is built like a MULTI_GET's reply.
bool StoreConnection::answerListKeys() {
  std::uint64_t size = sizeof(std::int64_t);
  table_.forEachKey([&size](const std::string& key) { size += sizeof(std::uint64_t) + key.size(); });
  const std::uint64_t limit = options_.limits.maxReplySize;
  if (size > limit) {
    end("LIST_KEYS of " + std::to_string(table_.size()) + " keys would need a reply of more than " +
        std::to_string(limit) + " bytes");
    return false;
  }
  std::string reply;
  reply.reserve(size);
  appendI64(reply, table_.size());
  table_.forEachKey([&reply](const std::string& key) { appendBytes(reply, key); });
  send(reply);
  return true;
}

// One more arrival at the barrier's counter; STOP_WAITING now when it was the last, else
// when the last arrives (parked like a WAIT, so CANCEL_WAIT ends it on the client's timeout).
bool StoreConnection::arriveAtBarrier(const Request& request) {
  StoreTable::WaiterId waiter = 0;
  try {
    waiter = table_.arriveAtBarrier(request.keys[0], request.number, wakeupForNextPark());
  } catch (const std::invalid_argument& error) {
    end(std::string("BARRIER: ") + error.what());
    return false;
  }
  if (waiter == 0) {
    answerBarrierReleased();
  } else {
    parked_ = Parked{request, waiter};
  }
  return true;
}

void StoreConnection::answerBarrierReleased() {
  std::string reply;
  appendU8(reply, kWaitStop);
  send(reply);
}

}  // namespace pltrun::rdzv
