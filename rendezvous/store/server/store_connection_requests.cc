// The requests of a store connection (store_connection.h): each one checked against the
// handshake, then answered from the table, applied, or parked until its keys exist.

#include <stdexcept>

#include "rendezvous/store/server/store_connection.h"

namespace pltrun::rdzv {

// Commands allowed before a connection has authenticated: they reveal and change nothing.
bool StoreConnection::allowedBeforeAuthentication(Command command) {
  return command == Command::Validate || command == Command::Ping || command == Command::AuthHello ||
         command == Command::AuthProof;
}

bool StoreConnection::handle(Request& request) {
  if (!authenticated_ && !allowedBeforeAuthentication(request.command)) {
    refuseUnauthenticated(request.command);
    return false;
  }
  // A queue item promised to this connection's last WAIT is for its QUEUE_POP, next.
  if (request.command != Command::QueuePop) table_.endPromises(id_);
  try {
    return apply(request);
  } catch (const TableFull& full) {
    // The store's byte, key or value limits: this client's write is refused (torch's way
    // to report an error is to close the connection); everything stored stays.
    end(std::string(commandName(request.command)) + " refused: " + full.what());
    return false;
  }
}

bool StoreConnection::apply(Request& request) {
  switch (request.command) {
    case Command::Validate:
      return true;  // checked by the decoder; torch expects no reply
    case Command::AuthHello:
      return handleHello(request);
    case Command::AuthProof:
      return handleProof(request);
    case Command::Set:
    case Command::SetEphemeral:
    case Command::OnCloseSet:
    case Command::Append:
    case Command::MultiSet:
    case Command::QueuePush:
      applyWrite(request);
      return true;
    case Command::Wait:
    case Command::Get:
    case Command::MultiGet:
      answerOrPark(std::move(request));
      return !closed_;
    case Command::Barrier:
      return arriveAtBarrier(request);
    default:
      return answerQuery(request);
  }
}

// The writes torch sends no reply to.
void StoreConnection::applyWrite(const Request& request) {
  switch (request.command) {
    case Command::Set:
      table_.set(request.keys[0], request.values[0]);
      break;
    case Command::SetEphemeral:
      table_.setEphemeral(request.keys[0], request.values[0], id_);
      break;
    case Command::OnCloseSet:
      table_.setCloseNotice(id_, request.keys[0], request.values[0]);
      break;
    case Command::Append:
      table_.append(request.keys[0], request.values[0]);
      break;
    case Command::MultiSet:
      table_.setMany(request.keys, request.values);
      break;
    case Command::QueuePush:
      table_.queuePush(request.keys[0], request.values[0]);
      break;
    default:
      break;
  }
}

// The requests answered at once, whatever the table holds.
bool StoreConnection::answerQuery(const Request& request) {
  std::string reply;
  switch (request.command) {
    case Command::Ping:
      appendU32(reply, static_cast<std::uint32_t>(request.number));
      break;
    case Command::CompareSet:
      appendBytes(reply, table_.compareSet(request.keys[0], request.values[0], request.values[1]));
      break;
    case Command::Add:
      try {
        appendI64(reply, table_.add(request.keys[0], request.number));
      } catch (const std::invalid_argument& error) {
        end(std::string("ADD: ") + error.what());
        return false;
      }
      break;
    case Command::Check:
      appendU8(reply, table_.readyAll(request.keys) ? kCheckReady : kCheckNotReady);
      break;
    case Command::QueuePop: {
      // The length before the pop, then the item when there was one (torch's reply).
      StoreTable::Popped popped = table_.queuePop(request.keys[0], id_);
      appendI64(reply, popped.lengthBefore);
      if (popped.lengthBefore > 0) appendBytes(reply, popped.value);
      break;
    }
    case Command::QueueLen:
      appendI64(reply, table_.queueLength(request.keys[0]));
      break;
    case Command::ListKeys:
      return answerListKeys();
    case Command::GetNumKeys:
      appendI64(reply, table_.size());
      break;
    case Command::DeleteKey:
      appendI64(reply, table_.erase(request.keys[0]));
      break;
    case Command::CancelWait:
      // Answered even when the wait already ended: the client reads one WAIT_CANCELED
      // after a possible STOP_WAITING.
      dropParked();
      appendU8(reply, kWaitCanceled);
      break;
    default:
      end(std::string("unexpected ") + commandName(request.command));
      return false;
  }
  send(reply);
  return true;
}

// The server proves the secret first, over the client's nonce and its own: a client
// learns whether this is its job's store before it sends anything of its own.
bool StoreConnection::handleHello(const Request& request) {
  const StoreServerOptions& options = options_;
  if (options.secret.empty()) {
    end("AUTH_HELLO refused: this store has no shared secret (the client has one: give the store the same "
        "secret, or the client none)");
    return false;
  }
  const std::string& context = request.keys[0];
  if (!options.context.empty() && context != options.context) {
    end("AUTH_HELLO refused: the client is in run " + printableKey(context) + "; this store serves run " +
        printableKey(options.context));
    return false;
  }
  handshake_ = Handshake{request.values[0], randomBytes(kAuthNonceSize), context};
  const Digest proof = serverProof(options.secret, *handshake_);
  std::string reply = handshake_->serverNonce;
  reply.append(reinterpret_cast<const char*>(proof.data()), proof.size());
  send(reply);
  return true;
}

bool StoreConnection::handleProof(const Request& request) {
  const std::string& secret = options_.secret;
  if (!handshake_) {  // only a store with a secret answers AUTH_HELLO
    end("AUTH_PROOF without AUTH_HELLO");
    return false;
  }
  const Digest expected = clientProof(secret, *handshake_);
  handshake_.reset();  // one proof per handshake: no second guess, no replay
  if (!digestsEqual(expected, digestOf(request.values[0]))) {
    end("authentication failed: wrong shared secret");
    return false;
  }
  authenticated_ = true;
  authDeadline_.reset();
  step_.authenticated = true;
  std::string reply;
  appendU8(reply, kAuthAccepted);
  send(reply);
  return true;
}

void StoreConnection::answerOrPark(Request request) {
  // WAIT is also the first half of a blocking queue pop: an item in a queue of that name
  // counts. GET and MULTI_GET need the keys' values.
  const bool queueItemsCount = request.command == Command::Wait;
  if (queueItemsCount ? table_.readyAll(request.keys) : table_.containsAll(request.keys)) {
    answerReady(request);
    return;
  }
  StoreTable::WaiterId waiter = table_.addWaiter(request.keys, wakeupForNextPark(), queueItemsCount);
  parked_ = Parked{std::move(request), waiter};
}

StoreTable::Wakeup StoreConnection::wakeupForNextPark() {
  const std::uint64_t generation = ++parkGeneration_;
  // The wakeup runs inside another connection's table update: the waker answers on a
  // later turn of the event loop, never re-entering the table from inside it. The table
  // drops the wakeup before this connection goes (dropParked, at the latest on close).
  return [this, generation] { waker_(generation); };
}

// Forgets the parked request (a CANCEL_WAIT, or the connection closing). A WAIT may have
// been woken by a queue item meanwhile: the item then wakes the next waiter instead.
void StoreConnection::dropParked() {
  if (!parked_) return;
  table_.cancelWaiter(parked_->waiter);
  if (parked_->request.command == Command::Wait) table_.passOnQueueItems(parked_->request.keys);
  parked_.reset();
  ++parkGeneration_;
}

void StoreConnection::answerReady(const Request& request) {
  std::string reply;
  if (request.command == Command::Wait) {
    table_.promiseQueueItems(id_, request.keys);
    appendU8(reply, kWaitStop);
  } else {
    // Sized before it is built: a small MULTI_GET naming one large value many times must
    // not make the server allocate gigabytes.
    const std::uint64_t limit = options_.limits.maxReplySize;
    std::uint64_t size = 0;
    for (const std::string& key : request.keys) {
      size += sizeof(std::uint64_t) + table_.peek(key)->size();
      if (size > limit) {
        end(std::string(commandName(request.command)) + " of " + std::to_string(request.keys.size()) +
            " keys would need a reply of more than " + std::to_string(limit) + " bytes; ask for fewer keys");
        return;
      }
    }
    reply.reserve(size);
    for (const std::string& key : request.keys) appendBytes(reply, *table_.peek(key));
  }
  send(reply);
}

}  // namespace pltrun::rdzv
