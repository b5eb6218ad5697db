// The pool behind CommandState's operator new/delete (src/core/state_pool.cpp).
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "redmux/command_state.hpp"
#include "redmux/future.hpp"

namespace redmux::detail {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooled = false;  // every state from operator new, so ASan sees misuse
#else
constexpr bool kPooled = true;
#endif

TEST(StatePool, AFreedBlockIsReusedForTheNextStateOfItsSize) {
  if (!kPooled) GTEST_SKIP() << "AddressSanitizer build: states are not pooled";
  void* first = allocate_state(120);
  deallocate_state(first, 120);
  void* second = allocate_state(128);  // same 128-byte class
  EXPECT_EQ(second, first);
  void* other = allocate_state(200);  // another class: not that block
  EXPECT_NE(other, first);
  deallocate_state(second, 128);
  deallocate_state(other, 200);
}

TEST(StatePool, BlocksAreWholeAndDistinct) {
  // Every live block is its own memory, as long as its class: fill each with its own
  // byte and read all back.
  std::vector<std::pair<unsigned char*, std::size_t>> blocks;
  for (std::size_t i = 0; i < 3000; ++i) {
    const std::size_t size = 1 + (i * 37) % 700;  // pooled sizes and larger ones
    auto* p = static_cast<unsigned char*>(allocate_state(size));
    std::memset(p, static_cast<int>(i & 0xff), size);
    blocks.emplace_back(p, size);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto [p, size] = blocks[i];
    for (std::size_t b = 0; b < size; ++b) {
      ASSERT_EQ(p[b], static_cast<unsigned char>(i & 0xff)) << "block " << i << " byte " << b;
    }
  }
  for (auto [p, size] : blocks) deallocate_state(p, size);
}

TEST(StatePool, StatesMoveBetweenThreadsAndOutliveTheirThreads) {
  // Allocated on one thread, freed on another (as a reply completes a caller's future),
  // more than a thread keeps to itself; then both threads exit and others reuse what they
  // handed back. ThreadSanitizer checks the hand-overs.
  constexpr std::size_t kCount = 20000;
  std::vector<void*> states(kCount);
  std::thread([&] {
    for (void*& p : states) {
      p = allocate_state(128);
      std::memset(p, 1, 128);
    }
  }).join();
  std::thread([&] {
    for (void* p : states) deallocate_state(p, 128);
  }).join();
  std::vector<std::thread> users;
  for (int t = 0; t < 4; ++t) {
    users.emplace_back([] {
      std::vector<void*> mine;
      for (std::size_t i = 0; i < kCount / 4; ++i) {
        mine.push_back(allocate_state(100));
        std::memset(mine.back(), 2, 100);
      }
      for (void* p : mine) deallocate_state(p, 100);
    });
  }
  for (std::thread& t : users) t.join();
}

TEST(StatePool, AThreadThatOnlyFreesHandsFullBatchesToTheOthersAndKeepsTwo) {
  // An I/O thread frees the states its callers allocated: it keeps at most two batches of
  // 256 (the list it frees onto and one full spare) and hands every other full batch to
  // the threads that allocate, whole.
  if (!kPooled) GTEST_SKIP() << "AddressSanitizer build: states are not pooled";
  constexpr std::size_t kSize = 448;  // a class no other test here uses
  constexpr std::size_t kBatch = 256, kCount = 16 * kBatch + 100;
  std::vector<void*> states(kCount);
  std::thread([&] {
    for (void*& p : states) p = allocate_state(kSize);
  }).join();
  const std::set<void*> allocated(states.begin(), states.end());
  std::mutex mutex;
  std::condition_variable changed;
  bool freed = false, taken = false;
  std::thread freer([&] {
    for (void* p : states) deallocate_state(p, kSize);
    std::unique_lock lock(mutex);
    freed = true;
    changed.notify_all();
    changed.wait(lock, [&] { return taken; });  // alive: it keeps what it has meanwhile
  });
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return freed; });
  }
  std::vector<void*> reused(kCount);
  std::thread([&] {
    for (void*& p : reused) p = allocate_state(kSize);
  }).join();
  // A thread's first slab is its own (its blocks lie together): the batches come after it.
  EXPECT_EQ(allocated.count(reused.front()), 0u) << "a new thread's first state came from a batch";
  std::size_t handed_over = 0;
  for (void* p : reused) handed_over += allocated.count(p);
  // Sixteen batches filled: fifteen handed over, the last one kept as the spare, and the
  // 100 freed after it on the freeing thread's own list.
  EXPECT_EQ(handed_over, 15 * kBatch);
  {
    std::lock_guard lock(mutex);
    taken = true;
  }
  changed.notify_all();
  freer.join();
  for (void* p : reused) deallocate_state(p, kSize);
}

TEST(StatePool, FuturesUseIt) {
  if (!kPooled) GTEST_SKIP() << "AddressSanitizer build: states are not pooled";
  void* probe = nullptr;
  {
    auto* state = new FutureState<long long>();
    probe = state;
    state->release();
  }
  auto* again = new FutureState<long long>();
  EXPECT_EQ(static_cast<void*>(again), probe);
  again->release();
}

}  // namespace
}  // namespace redmux::detail
