// Published<T> (core/published.hpp): a reader that has seen a value reads it again without
// the lock, and sees a replacement as soon as set() has returned.
#include "core/published.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <thread>

namespace redmux::detail {
namespace {

void publish(Published<int>& published, std::mutex& mutex, int value) {
  std::lock_guard lock(mutex);
  published.set(std::make_shared<const int>(value));
}

TEST(PublishedTest, NothingSetReadsAsNull) {
  std::mutex mutex;
  Published<int> published;
  Published<int>::Seen seen;
  EXPECT_EQ(published.read(seen, mutex), nullptr);
}

TEST(PublishedTest, AReaderSeesEachReplacementAndKeepsWhatItRead) {
  std::mutex mutex;
  Published<int> published;
  Published<int>::Seen seen;
  publish(published, mutex, 1);
  const int* first = published.read(seen, mutex);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(*first, 1);
  EXPECT_EQ(published.read(seen, mutex), first);  // seen: the same value, no new copy
  std::weak_ptr<const int> old;
  {
    std::lock_guard lock(mutex);
    old = published.get();
    published.set(std::make_shared<const int>(2));
  }
  EXPECT_FALSE(old.expired());  // the reader's Seen still holds the value it read
  const int* second = published.read(seen, mutex);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(*second, 2);
  EXPECT_TRUE(old.expired());  // given up by the read that found the newer version
}

TEST(PublishedTest, OneSeenReadsTwoPublishersApart) {
  std::mutex mutex;
  Published<int> a;
  Published<int> b;
  publish(a, mutex, 1);
  publish(b, mutex, 2);  // both at the same version now
  ASSERT_EQ(a.version(), b.version());
  Published<int>::Seen seen;
  EXPECT_EQ(*a.read(seen, mutex), 1);
  EXPECT_EQ(*b.read(seen, mutex), 2);
  EXPECT_EQ(*a.read(seen, mutex), 1);
}

TEST(PublishedTest, AnotherThreadSeesAValueSetBeforeItWasStarted) {
  std::mutex mutex;
  Published<int> published;
  Published<int>::Seen mine;
  publish(published, mutex, 1);
  EXPECT_EQ(*published.read(mine, mutex), 1);
  publish(published, mutex, 2);
  int other = 0;
  std::thread([&] {
    thread_local Published<int>::Seen seen;
    other = *published.read(seen, mutex);
  }).join();
  EXPECT_EQ(other, 2);
  EXPECT_EQ(*published.read(mine, mutex), 2);
}

}  // namespace
}  // namespace redmux::detail
