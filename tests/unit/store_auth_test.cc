// The store's handshake: libcrypto's HMAC-SHA256 as the wrapper calls it, against RFC 4231's
// vectors; the proofs against Python's hmac module (the wire format, pinned); and the
// properties the handshake relies on (each side's proof differs, and every input counts).

#include "rendezvous/store/store_auth.h"

#include <catch2/catch.hpp>
#include <string>

using pltrun::rdzv::clientProof;
using pltrun::rdzv::Digest;
using pltrun::rdzv::digestOf;
using pltrun::rdzv::digestsEqual;
using pltrun::rdzv::Handshake;
using pltrun::rdzv::hmacSha256;
using pltrun::rdzv::randomBytes;
using pltrun::rdzv::serverProof;
using pltrun::rdzv::toHex;

namespace {

std::string hexOf(const Digest& digest) {
  return toHex(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string hexOfHmac(const std::string& key, const std::string& message) { return hexOf(hmacSha256(key, message)); }

// Bytes first, first+1, ...: every byte value, not just printable text.
std::string countingBytes(int first, size_t n) {
  std::string bytes;
  for (size_t i = 0; i < n; ++i) bytes += static_cast<char>(first + static_cast<int>(i));
  return bytes;
}

Handshake exampleHandshake() { return Handshake{countingBytes(0, 32), countingBytes(32, 32), "run-42"}; }

}  // namespace

TEST_CASE("HMAC-SHA256 RFC 4231 test cases 1, 2, 3, 4, 6 and 7", "[store_auth]") {
  SECTION("case 1: 20-byte key of 0x0b") {
    CHECK(hexOfHmac(std::string(20, '\x0b'), "Hi There") ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  }
  SECTION("case 2: key shorter than the digest") {
    CHECK(hexOfHmac("Jefe", "what do ya want for nothing?") ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  }
  SECTION("case 3: 0xaa key, 50 bytes of 0xdd") {
    CHECK(hexOfHmac(std::string(20, '\xaa'), std::string(50, '\xdd')) ==
          "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  }
  SECTION("case 4: key 0x01..0x19, 50 bytes of 0xcd") {
    std::string key;
    for (int i = 1; i <= 25; ++i) key += static_cast<char>(i);
    CHECK(hexOfHmac(key, std::string(50, '\xcd')) ==
          "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  }
  SECTION("case 6: 131-byte key, longer than the block, is hashed first") {
    CHECK(hexOfHmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First") ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  }
  SECTION("case 7: long key and a message longer than the block") {
    CHECK(hexOfHmac(std::string(131, '\xaa'),
                    "This is a test using a larger than block-size key and a larger than block-size data. The key "
                    "needs to be hashed before being used by the HMAC algorithm.") ==
          "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  }
}

// Computed with /usr/bin/python3 hmac.new(b"K"*n, b"msg", hashlib.sha256).hexdigest():
// a key of exactly one block is used as is, one byte more is hashed first.
TEST_CASE("HMAC-SHA256 with keys of exactly one block and one byte more", "[store_auth]") {
  CHECK(hexOfHmac(std::string(64, 'K'), "msg") == "2b8a95286e6947c38c167443fc55c4f4f9462f59bf5aca159bc6d7ba69f2150f");
  CHECK(hexOfHmac(std::string(65, 'K'), "msg") == "1c45c2e7accd193636c385b7cae549fe351aa313a52c88bdb05a5bf0cd5e9213");
}

TEST_CASE("HMAC-SHA256 with an empty key and an empty message", "[store_auth]") {
  // hmac.new(b"", b"", hashlib.sha256).hexdigest()
  CHECK(hexOfHmac("", "") == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

// /usr/bin/python3: hmac.new(b"sixteen byte key!", LABEL + bytes(range(32)) +
// bytes(range(32, 64)) + b"run-42", hashlib.sha256).hexdigest(), with LABEL
// b"pltrun-store-auth-v2 server" or b"pltrun-store-auth-v2 client".
TEST_CASE("the proofs are HMAC-SHA256 over a label, both nonces and the context", "[store_auth]") {
  const Handshake handshake = exampleHandshake();
  CHECK(hexOf(serverProof("sixteen byte key!", handshake)) ==
        "6be538ecc8f8558cfedb33ecebdb1df4e1dbc2734c5a18ebb9385c6b13999161");
  CHECK(hexOf(clientProof("sixteen byte key!", handshake)) ==
        "569410aa1cfac9bada50162717b7205609fa8cc736afea999e229405f8a3532c");
}

TEST_CASE("each side's proof differs, and depends on the secret, both nonces and the context", "[store_auth]") {
  const std::string secret = "sixteen byte key!";
  const Handshake base = exampleHandshake();
  const Digest server = serverProof(secret, base);
  const Digest client = clientProof(secret, base);
  // The server's proof is never the answer the client owes (no reflection).
  CHECK_FALSE(digestsEqual(server, client));
  // Deterministic for the same inputs.
  CHECK(digestsEqual(server, serverProof(secret, base)));

  Handshake otherClientNonce = base;
  otherClientNonce.clientNonce[31] ^= 1;
  Handshake otherServerNonce = base;
  otherServerNonce.serverNonce[0] ^= 1;
  Handshake otherContext = base;
  otherContext.context = "run-43";
  for (const Handshake& changed : {otherClientNonce, otherServerNonce, otherContext}) {
    CHECK_FALSE(digestsEqual(server, serverProof(secret, changed)));
    CHECK_FALSE(digestsEqual(client, clientProof(secret, changed)));
  }
  CHECK_FALSE(digestsEqual(server, serverProof("sixteen byte key?", base)));
}

TEST_CASE("digestsEqual compares every byte", "[store_auth]") {
  Digest a = hmacSha256("k", "abc");
  Digest same = hmacSha256("k", "abc");
  CHECK(digestsEqual(a, same));
  CHECK(digestsEqual(a, a));
  CHECK_FALSE(digestsEqual(a, hmacSha256("k", "abd")));

  // A difference in any single byte or bit, first, middle or last, is noticed.
  for (size_t i = 0; i < a.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Digest changed = a;
      changed[i] = static_cast<std::uint8_t>(changed[i] ^ (1u << bit));
      CAPTURE(i, bit);
      CHECK_FALSE(digestsEqual(a, changed));
      CHECK_FALSE(digestsEqual(changed, a));
    }
  }
  CHECK(digestsEqual(Digest{}, Digest{}));
}

TEST_CASE("digestOf reads 32 wire bytes, toHex writes lowercase hex in byte order", "[store_auth]") {
  const std::string wire = countingBytes(1, 32);
  const Digest digest = digestOf(wire);
  CHECK(digest[0] == 1);
  CHECK(digest[31] == 32);
  CHECK(toHex(std::string("\x00\x7f\xff", 3)) == "007fff");
}

TEST_CASE("randomBytes gives the length asked for, different each time", "[store_auth]") {
  const std::string first = randomBytes(32);
  const std::string second = randomBytes(32);
  CHECK(first.size() == 32);
  CHECK(second.size() == 32);
  CHECK(first != second);
}
