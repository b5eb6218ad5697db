// Memory for command states (CommandState's operator new/delete, command_state.hpp).
//
// Every command allocates one state and frees it when both its Future and its connection
// are done with it, often on another thread and with thousands outstanding at once: a
// burst of 10,000 commands allocates 10,000 states before it frees the first. malloc
// serves that pattern from its slow paths (per-thread caches hold 7 blocks of a size), at
// about 190 instructions for each allocation and as many for each free. Here a state comes
// from a per-thread free list or, when the list is empty, from a per-thread slab by
// bumping a pointer; a freed state goes onto the freeing thread's list.
//
// Blocks move between threads in batches of kBatch, never one by one and never by walking
// a list: a thread's list of a size is two batches at most, the one it takes from and
// frees onto (`active`) and a full one behind it (`spare`). A free that fills `active`
// moves it behind as `spare`, handing the old spare to a shared stack of batches (under a
// mutex); an allocation that finds both empty and its slab used up takes a batch from the
// stack before it cuts a new slab (a thread's first slab is cut at once: its blocks lie
// together, where a batch's are scattered). Each hand-over is a few pointer stores: a batch carries
// its tail and count in its first block. (An I/O thread frees the states its callers allocated:
// with lists handed over whole by walking them, each hand-over touched thousands of cold blocks.)
//
// Memory is kept for reuse, never returned to the system: its peak is the peak number of
// command states alive at once (outstanding futures, plus then() chains) times their size
// (a state of a scalar result is 128 bytes), plus two batches per thread and size. States
// larger than kMaxPooled bytes, and every state under AddressSanitizer (so that it still
// sees use after free), go to the global operator new.
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
constexpr std::uint32_t kBatch = 256;  // blocks handed between threads at once

// A free block. The first block of a batch on the shared stack also says where the batch
// ends and which batch comes next (a block is at least 64 bytes).
struct FreeBlock {
  FreeBlock* next;        // the next block of its list or batch
  FreeBlock* tail;        // a batch's first block: its last block
  FreeBlock* next_batch;  // a batch's first block on the shared stack: the batch below
  std::uint32_t count;    // a batch's first block: its blocks
};
static_assert(sizeof(FreeBlock) <= kGranule);

// A list of free blocks whose ends and length are known, so that it moves as a whole.
struct BlockList {
  FreeBlock* head;
  FreeBlock* tail;
  std::uint32_t count;

  void push(FreeBlock* block) noexcept {
    block->next = head;
    if (head == nullptr) tail = block;
    head = block;
    ++count;
  }
  FreeBlock* pop() noexcept {
    FreeBlock* block = head;
    head = block->next;
    --count;
    return block;
  }
};

// Batches handed back by threads with too many, or by threads that exited.
struct SharedBatches {
  std::mutex mutex;
  FreeBlock* top[kClasses] = {};
};

SharedBatches& shared_batches() {
  static SharedBatches* batches = new SharedBatches();  // never destroyed: states outlive statics
  return *batches;
}

// Pushes `list` (not empty) onto the shared stack of class c, in O(1).
void give_to_shared(std::size_t c, const BlockList& list) {
  FreeBlock* first = list.head;
  first->tail = list.tail;
  first->count = list.count;
  SharedBatches& batches = shared_batches();
  std::lock_guard lock(batches.mutex);
  first->next_batch = batches.top[c];
  batches.top[c] = first;
}

// The batch on top of the shared stack of class c, or an empty list.
BlockList take_from_shared(std::size_t c) {
  SharedBatches& batches = shared_batches();
  FreeBlock* first;
  {
    std::lock_guard lock(batches.mutex);
    first = batches.top[c];
    if (first == nullptr) return {};
    batches.top[c] = first->next_batch;
  }
  return {first, first->tail, first->count};
}

// Set once this thread's pool has been handed back (thread exit): a state freed later (by
// a thread_local destructor that runs after that) goes to the shared stack.
thread_local bool t_pool_gone = false;

// A thread's blocks. Trivially destructible, so that reaching it costs no guard check:
// ExitHook, registered the first time the thread allocates or frees a state, hands its
// lists back when the thread exits.
struct LocalPool {
  BlockList active[kClasses];
  BlockList spare[kClasses];  // empty, or kBatch blocks
  char* bump;
  char* bump_end;
  bool hooked;  // ExitHook registered

  void* allocate(std::size_t c);
  void deallocate(void* p, std::size_t c) noexcept {
    if (!hooked) [[unlikely]]
      hook();
    active[c].push(static_cast<FreeBlock*>(p));
    if (active[c].count == kBatch) [[unlikely]]
      retire_active(c);
  }
  void give_back() noexcept;

 private:
  void hook() noexcept;
  void retire_active(std::size_t c) noexcept;
};

constinit thread_local LocalPool t_pool{};

struct ExitHook {
  ~ExitHook() { t_pool.give_back(); }
};

void* LocalPool::allocate(std::size_t c) {
  if (active[c].head != nullptr) return active[c].pop();
  if (spare[c].head != nullptr) {
    active[c] = spare[c];
    spare[c] = {};
    return active[c].pop();
  }
  const std::size_t bytes = (c + 1) * kGranule;
  if (static_cast<std::size_t>(bump_end - bump) < bytes) {
    // The slab is used up: a batch other threads handed back comes first, then a new slab.
    // A thread's first slab is its own, though: its first blocks lie together, and a thread
    // that frees what it allocates (a caller awaiting a window of futures) keeps reusing
    // them. Batches handed back are scattered over every slab their blocks came from.
    if (bump != nullptr) {
      if (BlockList batch = take_from_shared(c); batch.head != nullptr) {
        active[c] = batch;
        return active[c].pop();
      }
    }
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

// `active` is full: it becomes the spare, and the spare before it goes to the others.
void LocalPool::retire_active(std::size_t c) noexcept {
  if (spare[c].head != nullptr) give_to_shared(c, spare[c]);
  spare[c] = active[c];
  active[c] = {};
}

void LocalPool::give_back() noexcept {
  t_pool_gone = true;
  for (std::size_t c = 0; c < kClasses; ++c) {
    for (BlockList* list : {&active[c], &spare[c]}) {
      if (list->head != nullptr) give_to_shared(c, *list);
      *list = {};
    }
  }
  // The rest of the slab is lost to reuse (under kSlabBytes per thread that ever allocated
  // a state); slabs are never freed.
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
    BlockList one{};
    one.push(static_cast<FreeBlock*>(block));
    give_to_shared(c, one);
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
