// When a connection gives back a buffer that large commands or replies grew: the one rule
// the read buffer (Reader) and the write buffers (Writer, SubmissionQueue) follow. A buffer
// grown past kShrinkAbove is kept while what passes through it keeps needing a quarter of it,
// and given back on a health tick after which nothing did. Given back each time it emptied,
// it was allocated, faulted in and grown again for every window of a steady stream of large
// values.
#pragma once

#include <algorithm>
#include <cstddef>

namespace redmux::detail {

/// Buffers up to this size are always kept.
inline constexpr std::size_t kShrinkAbove = 1024 * 1024;

/// The largest buffer kept after a tick interval whose largest write or reply was `peak`
/// bytes; a larger one is given back.
constexpr std::size_t kept_capacity(std::size_t peak) noexcept {
  return std::max(kShrinkAbove, 4 * peak);
}

}  // namespace redmux::detail
