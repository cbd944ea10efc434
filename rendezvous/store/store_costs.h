#pragma once
// What the store's memory really holds for each thing a client can make it keep, as the
// table charges it against --max-store-bytes: the bytes of its keys and values plus a fixed
// cost per item for the containers and the allocator (64-bit libstdc++ and glibc malloc).
// Without these, an empty queue item cost nothing, and a flood of empty items grew the
// server's memory far past its byte limit. `scripts/bench/store.sh --flood` checks them
// against the RSS (docs/PERFORMANCE.md, store).

#include <cstdint>
#include <string>
#include <vector>

namespace pltrun::rdzv::cost {

/// A key: its hash node (key and value strings, owner, cached hash, link), its bucket, and
/// the heap headers of a long key and value.
inline constexpr std::uint64_t kKey = 128;
/// An ephemeral key's second copy, in its connection's set of owned keys (node and bucket).
inline constexpr std::uint64_t kOwnership = 64;
/// One queue item: its std::string in the deque block, the heap header of a long value.
inline constexpr std::uint64_t kQueueItem = 48;
/// A queue that holds items: its hash node, the deque's map and its first 512-byte block.
inline constexpr std::uint64_t kQueue = 768;
/// A parked request (WAIT, GET, MULTI_GET, BARRIER): its waiter and its wakeup.
inline constexpr std::uint64_t kWaiter = 256;
/// Each key of a parked request is held three times (the request, the waiter, the index of
/// waiters by key, whose node and vector are here) besides its bytes, three times over.
inline constexpr std::uint64_t kWaitedKey = 256;
inline constexpr std::uint64_t kWaitedKeyCopies = 3;
/// A connection's close notice: its node and the heap headers of its key and value.
inline constexpr std::uint64_t kCloseNotice = 128;

inline std::uint64_t ofKey(const std::string& key, std::uint64_t valueSize, bool owned) {
  return kKey + key.size() + valueSize + (owned ? kOwnership + key.size() : 0);
}

inline std::uint64_t ofWaiter(const std::vector<std::string>& keys) {
  std::uint64_t total = kWaiter;
  for (const std::string& key : keys) total += kWaitedKey + kWaitedKeyCopies * key.size();
  return total;
}

}  // namespace pltrun::rdzv::cost
