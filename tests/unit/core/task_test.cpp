// Task<T>: a lazy coroutine over redmux futures — awaited from another task, run to
// completion from a plain thread, started as a Future; values, void and exceptions.
#include "redmux/task.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace redmux {
namespace {

using detail::FutureState;

/// Futures the test completes from another thread, as connections would.
struct Completer {
  std::vector<FutureState<long long>*> states;
  Future<long long> next() {
    auto* state = new FutureState<long long>();
    state->add_ref();
    states.push_back(state);
    return Future<long long>(state);
  }
};

Task<long long> add(Future<long long> a, Future<long long> b) {
  long long x = co_await std::move(a);
  long long y = co_await std::move(b);
  co_return x + y;
}

Task<long long> doubled(Task<long long> inner) {
  long long v = co_await std::move(inner);
  co_return v * 2;
}

Task<void> throws_after(Future<long long> f) {
  co_await std::move(f);
  throw std::runtime_error("bad book");
}

Task<std::string> catches(Task<void> inner) {
  try {
    co_await std::move(inner);
  } catch (const std::runtime_error& e) {
    co_return std::string("caught ") + e.what();
  }
  co_return "nothing";
}

TEST(TaskTest, IsLazyUntilStarted) {
  bool ran = false;
  auto body = [&]() -> Task<void> {
    ran = true;
    co_return;
  };
  {
    Task<void> task = body();
    EXPECT_FALSE(ran);
  }  // destroyed without running
  EXPECT_FALSE(ran);
  Task<void> task = body();
  std::move(task).get();
  EXPECT_TRUE(ran);
  EXPECT_FALSE(task.valid());
}

TEST(TaskTest, GetRunsToCompletionWhileAnotherThreadCompletesTheCommands) {
  Completer io;
  Future<long long> a = io.next();
  Future<long long> b = io.next();
  std::thread server([&] {
    for (auto* state : io.states) {
      state->set(20 + static_cast<long long>(state == io.states.back()));
      state->release();
    }
  });
  EXPECT_EQ(doubled(add(std::move(a), std::move(b))).get(), 82);
  server.join();
}

TEST(TaskTest, StartHandsOverAFutureThatChains) {
  Completer io;
  Future<long long> a = io.next();
  Future<long long> b = io.next();
  Future<long long> started = add(std::move(a), std::move(b)).start();
  EXPECT_FALSE(started.ready());  // suspended in its first co_await
  Future<std::string> text = started.then([](Result<long long> r) { return std::to_string(*r); });
  for (auto* state : io.states) {
    state->set(1);
    state->release();
  }
  EXPECT_EQ(text.get(), "2");
}

TEST(TaskTest, ExceptionReachesTheAwaitingTaskAsThrown) {
  EXPECT_EQ(catches(throws_after(Future<long long>::ready_with(1))).get(), "caught bad book");
}

TEST(TaskTest, ExceptionBecomesTheFuturesError) {
  Result<void> r = throws_after(Future<long long>::ready_with(1)).start().result();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::handler_failed);
  EXPECT_EQ(r.error().message(), "a Task threw: bad book");
  // a command's typed error keeps its type through get()
  EXPECT_THROW(add(Future<long long>::ready_with(Error(errc::timeout, "INCR timed out")),
                   Future<long long>::ready_with(1))
                   .get(),
               TimeoutError);
}

TEST(TaskTest, GetOnAnIoThreadRefusesBeforeTheTaskStarts) {
  bool ran = false;
  auto body = [&]() -> Task<void> {
    ran = true;
    co_return;
  };
  detail::IoThreadScope scope;
  EXPECT_THROW(body().get(), DeadlockError);
  EXPECT_FALSE(ran);
}

TEST(TaskTest, UsedUpTaskRefusesClearly) {
  auto body = []() -> Task<long long> { co_return 1; };
  Task<long long> task = body();
  Future<long long> f = std::move(task).start();
  EXPECT_EQ(f.get(), 1);
  EXPECT_THROW(std::move(task).start(), InvalidArgumentError);
}

}  // namespace
}  // namespace redmux
