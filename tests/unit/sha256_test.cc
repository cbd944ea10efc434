// SHA-256 and HMAC-SHA256 against published vectors (FIPS 180-4 examples, RFC 4231) and
// against Python's hashlib around the padding boundaries.

#include "rendezvous/sha256.h"

#include <catch2/catch.hpp>
#include <string>

using pltrun::rdzv::Digest;
using pltrun::rdzv::digestsEqual;
using pltrun::rdzv::hmacSha256;
using pltrun::rdzv::sha256;
using pltrun::rdzv::toHex;

namespace {

std::string hexOfSha256(const std::string& data) { return toHex(sha256(data)); }

std::string hexOfHmac(const std::string& key, const std::string& message) { return toHex(hmacSha256(key, message)); }

// Bytes 0, 1, 2, ... n-1: every byte value up to n, not just printable text.
std::string countingBytes(size_t n) {
  std::string bytes;
  for (size_t i = 0; i < n; ++i) bytes += static_cast<char>(i);
  return bytes;
}

}  // namespace

TEST_CASE("sha256 of the FIPS 180-4 example messages", "[sha256]") {
  CHECK(hexOfSha256("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hexOfSha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hexOfSha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("sha256 of one million 'a' bytes", "[sha256]") {
  CHECK(hexOfSha256(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Expected values computed when this test was written with
//   /usr/bin/python3 -c 'import hashlib; print(hashlib.sha256(b"a"*n).hexdigest())'
// and, for the second table, hashlib.sha256(bytes(range(n))).hexdigest().
// 55 bytes is the longest message whose padding fits one block; 56 needs a second block;
// 63/64/65 straddle a whole block of message.
TEST_CASE("sha256 around the padding boundaries matches hashlib", "[sha256]") {
  struct Vector {
    size_t length;
    const char* repeatedA;
    const char* counting;
  };
  const Vector vectors[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
       "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
       "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
       "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
       "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0",
       "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
  };
  for (const Vector& vector : vectors) {
    CAPTURE(vector.length);
    CHECK(hexOfSha256(std::string(vector.length, 'a')) == vector.repeatedA);
    CHECK(hexOfSha256(countingBytes(vector.length)) == vector.counting);
  }
}

TEST_CASE("sha256 hashes embedded NUL and high bytes", "[sha256]") {
  // hashlib.sha256(b"a\x00b\xff").hexdigest()
  CHECK(hexOfSha256(std::string("a\0b\xff", 4)) == "a37cc3026aae4d519e0b19c298fa913b4dccfdf0658cbccbb7deaa0226d5acdb");
  // A NUL is data, not a terminator.
  CHECK(hexOfSha256(std::string("a\0b\xff", 4)) != hexOfSha256("a"));
}

TEST_CASE("toHex writes 64 lowercase hex digits in byte order", "[sha256]") {
  Digest digest{};
  for (size_t i = 0; i < digest.size(); ++i) digest[i] = static_cast<std::uint8_t>(i * 8 + 1);
  CHECK(toHex(digest) == "0109111921293139414951596169717981899199a1a9b1b9c1c9d1d9e1e9f1f9");
}

TEST_CASE("HMAC-SHA256 RFC 4231 test cases 1, 2, 3, 4, 6 and 7", "[sha256]") {
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
TEST_CASE("HMAC-SHA256 with keys of exactly one block and one byte more", "[sha256]") {
  CHECK(hexOfHmac(std::string(64, 'K'), "msg") == "2b8a95286e6947c38c167443fc55c4f4f9462f59bf5aca159bc6d7ba69f2150f");
  CHECK(hexOfHmac(std::string(65, 'K'), "msg") == "1c45c2e7accd193636c385b7cae549fe351aa313a52c88bdb05a5bf0cd5e9213");
}

TEST_CASE("digestsEqual compares every byte", "[sha256]") {
  Digest a = sha256("abc");
  Digest same = sha256("abc");
  CHECK(digestsEqual(a, same));
  CHECK(digestsEqual(a, a));
  CHECK_FALSE(digestsEqual(a, sha256("abd")));

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
