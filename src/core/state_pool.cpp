// Memory for command states (CommandState's operator new/delete, command_state.hpp).
//
// Every command allocates one state and frees it when both its Future and its connection
// are done with it, often on another thread and with thousands outstanding at once: a
// burst of 10,000 commands allocates 10,000 states before it frees the first. malloc
// serves that pattern from its slow paths (per-thread caches hold 7 blocks of a size), at
// about 190 instructions for each allocation and as many for each free. Here a state comes
// from a per-thread free list or, when the list is empty, from a per-thread slab by
// bumping a pointer; a freed state goes onto the freeing thread's list. Past
// kLocalLimit blocks, a thread hands half of its list to a shared list (under a mutex),
// which threads with an empty list take from before they cut a new slab.
//
// Memory is kept for reuse, never returned to the system: its peak is the peak number of
// command states alive at once (outstanding futures, plus then() chains) times their size
// (a state of a scalar result is 128 bytes). States larger than kMaxPooled bytes, and
// every state under AddressSanitizer (so that it still sees use after free), go to the
// global operator new.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

#include "redmux/command_state.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define REDMUX_STATE_POOL 0
#else
#define REDMUX_STATE_POOL 1
#endif

namespace redmux::detail {

#if REDMUX_STATE_POOL
namespace {

constexpr std::size_t kGranule = 64;  // block sizes are multiples of this
constexpr std::size_t kClasses = 8;   // 64 … 512 bytes
constexpr std::size_t kMaxPooled = kGranule * kClasses;
constexpr std::size_t kSlabBytes = 64 * 1024;
constexpr std::uint32_t kLocalLimit = 4096;  // blocks of one size a thread keeps to itself

struct FreeBlock {
  FreeBlock* next;
};

// Blocks handed back by threads with too many, or by threads that exited.
struct SharedLists {
  std::mutex mutex;
  FreeBlock* head[kClasses] = {};
};

SharedLists& shared_lists() {
  static SharedLists* lists = new SharedLists();  // never destroyed: states outlive statics
  return *lists;
}

// Pushes the chain first … last (count blocks) onto the shared list of class c.
void give_to_shared(std::size_t c, FreeBlock* first, FreeBlock* last) {
  SharedLists& lists = shared_lists();
  std::lock_guard lock(lists.mutex);
  last->next = lists.head[c];
  lists.head[c] = first;
}

// Set once this thread's pool has been handed back (thread exit): a state freed later (by
// a thread_local destructor that runs after that) goes to the shared list.
thread_local bool t_pool_gone = false;

// A thread's blocks. Trivially destructible, so that reaching it costs no guard check:
// ExitHook, registered the first time the thread allocates or frees a state, hands its
// lists back when the thread exits.
struct LocalPool {
  FreeBlock* head[kClasses];
  std::uint32_t count[kClasses];
  char* bump;
  char* bump_end;
  bool hooked;  // ExitHook registered

  void* allocate(std::size_t c);
  void deallocate(void* p, std::size_t c) noexcept {
    if (!hooked) [[unlikely]]
      hook();
    auto* block = static_cast<FreeBlock*>(p);
    block->next = head[c];
    head[c] = block;
    if (++count[c] > kLocalLimit) give_half(c);
  }
  void give_back() noexcept;

 private:
  void hook() noexcept;
  bool take_shared(std::size_t c);
  void give_half(std::size_t c) noexcept;
};

constinit thread_local LocalPool t_pool{};

struct ExitHook {
  ~ExitHook() { t_pool.give_back(); }
};

void* LocalPool::allocate(std::size_t c) {
  if (FreeBlock* block = head[c]) {
    head[c] = block->next;
    --count[c];
    return block;
  }
  const std::size_t bytes = (c + 1) * kGranule;
  if (static_cast<std::size_t>(bump_end - bump) < bytes) {
    // The slab is used up: blocks other threads handed back come first, then a new slab.
    if (take_shared(c)) return allocate(c);
    if (!hooked) hook();
    bump = static_cast<char*>(::operator new(kSlabBytes));
    bump_end = bump + kSlabBytes;
  }
  void* block = bump;
  bump += bytes;
  return block;
}

void LocalPool::hook() noexcept {
  thread_local ExitHook exit_hook;  // registers the hand-back at this thread's exit
  (void)exit_hook;
  hooked = true;
}

void LocalPool::give_back() noexcept {
  t_pool_gone = true;
  for (std::size_t c = 0; c < kClasses; ++c) {
    if (head[c] == nullptr) continue;
    FreeBlock* last = head[c];
    while (last->next != nullptr) last = last->next;
    give_to_shared(c, head[c], last);
    head[c] = nullptr;
    count[c] = 0;
  }
  // The rest of the slab is lost to reuse (under kSlabBytes per thread that ever allocated
  // a state); slabs are never freed.
}

// Moves the shared list of class c here; false when it was empty.
bool LocalPool::take_shared(std::size_t c) {
  SharedLists& lists = shared_lists();
  FreeBlock* taken = nullptr;
  {
    std::lock_guard lock(lists.mutex);
    taken = lists.head[c];
    lists.head[c] = nullptr;
  }
  if (taken == nullptr) return false;
  std::uint32_t n = 1;
  FreeBlock* last = taken;
  for (; last->next != nullptr; last = last->next) ++n;
  last->next = head[c];
  head[c] = taken;
  count[c] += n;
  return true;
}

// Hands all but kLocalLimit / 2 blocks of class c to the shared list.
void LocalPool::give_half(std::size_t c) noexcept {
  const std::uint32_t keep = kLocalLimit / 2;
  FreeBlock* first = head[c];
  FreeBlock* last = first;
  for (std::uint32_t i = 1; i < count[c] - keep; ++i) last = last->next;
  head[c] = last->next;
  count[c] = keep;
  give_to_shared(c, first, last);
}

constexpr std::size_t size_class(std::size_t size) noexcept {
  return (size - 1) / kGranule;
}

}  // namespace

void* allocate_state(std::size_t size) {
  if (size == 0 || size > kMaxPooled) return ::operator new(size);
  // A block of the whole class, even from operator new: once freed it joins the lists.
  if (t_pool_gone) return ::operator new((size_class(size) + 1) * kGranule);
  return t_pool.allocate(size_class(size));
}

void deallocate_state(void* block, std::size_t size) noexcept {
  if (size == 0 || size > kMaxPooled) {
    ::operator delete(block, size);
    return;
  }
  const std::size_t c = size_class(size);
  if (t_pool_gone) {
    auto* one = static_cast<FreeBlock*>(block);
    give_to_shared(c, one, one);
    return;
  }
  t_pool.deallocate(block, c);
}

#else  // AddressSanitizer: every state from the global allocator

void* allocate_state(std::size_t size) {
  return ::operator new(size);
}

void deallocate_state(void* block, std::size_t size) noexcept {
  ::operator delete(block, size);
}

#endif

}  // namespace redmux::detail
