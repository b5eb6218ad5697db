// HandlerArena: a fixed block of memory reused by one kind of asynchronous operation of a
// connection (its write, its read, its wake-up), so that steady-state I/O allocates nothing.
// An operation that finds the block in use (a second wake-up posted before the first ran)
// falls back to the heap. The in-use flag is atomic because a wake-up is posted by caller
// threads and freed on the I/O thread.
//
// Lifetime: Asio moves a handler out of its operation before freeing the operation's memory,
// and the handler holds a shared_ptr to the connection that owns the arena, so the arena
// outlives every block handed out from it.
#pragma once

#include <asio/bind_allocator.hpp>
#include <atomic>
#include <cstddef>
#include <new>

namespace redmux::detail {

class HandlerArena {
 public:
  HandlerArena() = default;
  HandlerArena(const HandlerArena&) = delete;
  HandlerArena& operator=(const HandlerArena&) = delete;

  void* allocate(std::size_t size) {
    if (size <= sizeof(storage_) && !in_use_.exchange(true, std::memory_order_acquire)) {
      return storage_;
    }
    return ::operator new(size);
  }
  void deallocate(void* block) noexcept {
    if (block == storage_) {
      in_use_.store(false, std::memory_order_release);
    } else {
      ::operator delete(block);
    }
  }

 private:
  alignas(std::max_align_t) unsigned char storage_[384];
  std::atomic<bool> in_use_{false};
};

template <class T>
class ArenaAllocator {
 public:
  using value_type = T;
  explicit ArenaAllocator(HandlerArena& arena) noexcept : arena_(&arena) {}
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>& other) noexcept : arena_(other.arena_) {}  // NOLINT

  T* allocate(std::size_t n) { return static_cast<T*>(arena_->allocate(sizeof(T) * n)); }
  void deallocate(T* block, std::size_t) noexcept { arena_->deallocate(block); }

  template <class U>
  bool operator==(const ArenaAllocator<U>& other) const noexcept {
    return arena_ == other.arena_;
  }

 private:
  template <class>
  friend class ArenaAllocator;
  HandlerArena* arena_;
};

/// Binds `handler` to allocate its operation from `arena`.
template <class Handler>
auto in_arena(HandlerArena& arena, Handler&& handler) {
  return asio::bind_allocator(ArenaAllocator<void>(arena), std::forward<Handler>(handler));
}

}  // namespace redmux::detail
