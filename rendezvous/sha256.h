#pragma once
// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the store's shared-secret
// challenge-response. Small and dependency-free so the client library needs no OpenSSL.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace pltrun::rdzv {

using Digest = std::array<std::uint8_t, 32>;

Digest sha256(std::string_view data);
Digest hmacSha256(std::string_view key, std::string_view message);

/// Compares in time independent of where the first difference is.
bool digestsEqual(const Digest& a, const Digest& b);

std::string toHex(const Digest& digest);

}  // namespace pltrun::rdzv
