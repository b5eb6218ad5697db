// then() returns a Future of the continuation's result, so continuations chain; what each
// kind of continuation (value, void, Result, Future, throwing) gives; when_all over chains.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redmux/future.hpp"

namespace redmux {
namespace {

using detail::FutureState;

/// A future whose state the test completes later (as a connection would), with the
/// completer's reference.
template <class T>
std::pair<Future<T>, FutureState<T>*> pending() {
  auto* state = new FutureState<T>();
  state->add_ref();
  return {Future<T>(state), state};
}

template <class T>
void complete(FutureState<T>* state, Result<T> result) {
  state->set(std::move(result));
  state->release();
}

TEST(FutureChainTest, ThenReturnsAFutureOfTheContinuationsValue) {
  auto [f, state] = pending<long long>();
  Future<std::string> text =
      f.then([](Result<long long> r) { return std::to_string(r.value() * 2); });
  EXPECT_FALSE(f.valid());
  EXPECT_FALSE(text.ready());
  std::thread io([state = state] { complete<long long>(state, 21); });
  EXPECT_EQ(text.get(), "42");
  io.join();
}

TEST(FutureChainTest, ContinuationsChainInOrder) {
  std::vector<int> order;
  Future<int> last = Future<int>::ready_with(1)
                         .then([&](Result<int> r) {
                           order.push_back(*r);
                           return *r + 1;
                         })
                         .then([&](Result<int> r) {
                           order.push_back(*r);
                           return *r + 1;
                         });
  EXPECT_EQ(last.get(), 3);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(FutureChainTest, VoidContinuationGivesFutureOfVoid) {
  bool ran = false;
  Future<void> done = Future<int>::ready_with(5).then([&](Result<int>) { ran = true; });
  EXPECT_NO_THROW(done.get());
  EXPECT_TRUE(ran);
}

TEST(FutureChainTest, AFailurePassesOnThroughValue) {
  Future<int> failed = Future<int>::ready_with(Error(errc::timeout, "INCR timed out"));
  Future<int> next = failed.then([](Result<int> r) { return r.value() + 1; });
  Result<int> r = next.result();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::timeout);
  EXPECT_EQ(r.error().message(), "INCR timed out");
}

TEST(FutureChainTest, ResultContinuationIsUnwrapped) {
  Future<int> next = Future<int>::ready_with(7).then([](Result<int> r) -> Result<int> {
    if (*r > 5) return Error(errc::invalid_argument, "too big");
    return *r;
  });
  Result<int> r = next.result();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::invalid_argument);
}

TEST(FutureChainTest, FutureContinuationIsAwaitedWithoutBlocking) {
  auto [first, first_state] = pending<int>();
  auto [second, second_state] = pending<std::string>();
  Future<std::string> chained =
      first.then([second = std::move(second)](Result<int>) mutable { return std::move(second); });
  complete<int>(first_state, 1);
  EXPECT_FALSE(chained.ready());  // waits for the inner future, on nobody's thread
  std::thread io([state = second_state] { complete<std::string>(state, std::string("inner")); });
  EXPECT_EQ(chained.get(), "inner");
  io.join();
}

TEST(FutureChainTest, ExceptionsCompleteTheChainedFuture) {
  Future<int> plain = Future<int>::ready_with(1).then(
      [](Result<int>) -> int { throw std::runtime_error("parse failed"); });
  Result<int> r = plain.result();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::handler_failed);
  EXPECT_EQ(r.error().message(), "a then() continuation threw: parse failed");

  Future<int> typed = Future<int>::ready_with(1).then(
      [](Result<int>) -> int { throw QueueFullError(errc::queue_full, "full"); });
  EXPECT_THROW(typed.get(), QueueFullError);
}

TEST(FutureChainTest, DroppedChainedFutureStillRunsTheContinuation) {
  auto [f, state] = pending<int>();
  std::atomic<int> seen{0};
  (void)f.then([&](Result<int> r) { seen = *r; });
  complete<int>(state, 9);
  EXPECT_EQ(seen.load(), 9);
}

TEST(FutureChainTest, WhenAllGathersChainedFutures) {
  std::vector<Future<int>> futures;
  std::vector<FutureState<int>*> states;
  for (int i = 0; i < 3; ++i) {
    auto [f, state] = pending<int>();
    futures.push_back(f.then([](Result<int> r) { return *r * 10; }));
    states.push_back(state);
  }
  Future<std::vector<Result<int>>> all = when_all(std::move(futures));
  std::thread io([&] {
    for (int i = 2; i >= 0; --i) complete<int>(states[static_cast<std::size_t>(i)], i);
  });
  std::vector<Result<int>> results = all.get();
  io.join();
  ASSERT_EQ(results.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*results[static_cast<std::size_t>(i)], i * 10);
  // and then() on the gathered future chains too
  Future<std::size_t> count =
      when_all(std::vector<Future<int>>{}).then([](Result<std::vector<Result<int>>> r) {
        return r->size();
      });
  EXPECT_EQ(count.get(), 0u);
}

}  // namespace
}  // namespace redmux
