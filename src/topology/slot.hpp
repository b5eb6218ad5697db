// Key slots: CRC16 (XMODEM) of the key, or of its {hash tag}, modulo 16384 — the Redis
// Cluster rule. Standalone multiplexers use it too, to spread keys over
// connectionsPerEndpoint connections so that one key always rides one connection.
#pragma once

#include <cstdint>
#include <string_view>

namespace redmux::detail {

inline constexpr std::uint16_t kSlotCount = 16384;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), as Redis Cluster uses.
std::uint16_t crc16(std::string_view bytes) noexcept;
/// The part of the key that is hashed: the text between the first '{' and the next '}' when
/// that is non-empty, else the whole key.
std::string_view hash_tag(std::string_view key) noexcept;
/// slot_of(key) = crc16(hash_tag(key)) mod 16384.
std::uint16_t slot_of(std::string_view key) noexcept;

}  // namespace redmux::detail
