// Replaces the global operator new and delete of a test binary to count heap allocations,
// in all threads and in the calling thread. Include it in exactly ONE translation unit of a
// binary (the replacement functions are defined here, not inline), and only in a binary of
// its own or one whose other tests do not mind the count. The array forms call these by
// default.
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace redmux::test {

inline std::atomic<long> g_allocations{0};   ///< every thread
inline thread_local long t_allocations = 0;  ///< the calling thread

/// Allocations so far, in every thread.
inline long allocations() noexcept {
  return g_allocations.load(std::memory_order_relaxed);
}
/// Allocations so far, in the calling thread.
inline long allocations_here() noexcept {
  return t_allocations;
}

}  // namespace redmux::test

// GCC 12 takes free() in a replaced operator delete for a mismatch when it sees a new[]
// expression in the same file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  redmux::test::g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++redmux::test::t_allocations;
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop
