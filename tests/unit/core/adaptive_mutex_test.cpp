// AdaptiveMutex (core/adaptive_mutex.hpp): one holder at a time, however many threads
// contend, and try_lock() refuses while another thread holds it.
#include "core/adaptive_mutex.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace redmux::detail {
namespace {

TEST(AdaptiveMutexTest, OneHolderAtATimeUnderContention) {
  AdaptiveMutex mutex;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  long long counter = 0;  // plain: a lost update shows a second holder too
  constexpr int kThreads = 8;
  constexpr int kRounds = 20'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard lock(mutex);
        if (inside.fetch_add(1, std::memory_order_relaxed) != 0) overlaps.fetch_add(1);
        const long long seen = counter;
        counter = seen + 1;
        inside.fetch_sub(1, std::memory_order_relaxed);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(counter, static_cast<long long>(kThreads) * kRounds);
}

TEST(AdaptiveMutexTest, TryLockFailsWhileAnotherThreadHoldsIt) {
  AdaptiveMutex mutex;
  std::unique_lock held(mutex);
  bool got = true;
  std::thread([&] { got = mutex.try_lock(); }).join();
  EXPECT_FALSE(got);
  held.unlock();
  std::thread([&] {
    got = mutex.try_lock();
    if (got) mutex.unlock();
  }).join();
  EXPECT_TRUE(got);
}

}  // namespace
}  // namespace redmux::detail
