#include "redmux/future.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace redmux {

namespace {

using detail::FutureState;

Node integer_node(std::string_view text) {
  Node n;
  n.type = ReplyType::Integer;
  n.value = text;
  return n;
}

TEST(FutureTest, GetReturnsDeliveredValueFromAnotherThread) {
  auto* state = new FutureState<long long>();
  state->add_ref();  // the "connection's" reference
  Future<long long> f(state);
  std::thread io([state] {
    Node n = integer_node("42");
    state->deliver(NodeSpan(&n, 1));
    state->release();
  });
  EXPECT_EQ(f.get(), 42);
  io.join();
}

TEST(FutureTest, SecondCompletionIsDropped) {
  auto* state = new FutureState<long long>();
  Future<long long> f(state);
  state->fail(Error(errc::timeout, "too late"));
  Node n = integer_node("7");
  state->deliver(NodeSpan(&n, 1));
  auto r = f.result();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::timeout);
}

TEST(FutureTest, ErrorReplyBecomesServerErrorNamingCommand) {
  auto* state = new FutureState<long long>();
  state->command_name = "INCR";
  Future<long long> f(state);
  Node n;
  n.type = ReplyType::SimpleError;
  n.value = "WRONGTYPE Operation against a key holding the wrong kind of value";
  state->deliver(NodeSpan(&n, 1));
  try {
    f.get();
    FAIL() << "expected ServerError";
  } catch (const ServerError& e) {
    EXPECT_EQ(e.prefix(), "WRONGTYPE");
    EXPECT_NE(std::string(e.what()).find("INCR"), std::string::npos);
  }
}

TEST(FutureTest, WaitForTimesOutThenSucceeds) {
  auto* state = new FutureState<long long>();
  Future<long long> f(state);
  EXPECT_FALSE(f.wait_for(std::chrono::milliseconds(20)));
  state->set(5LL);
  EXPECT_TRUE(f.wait_for(std::chrono::milliseconds(0)));
  EXPECT_EQ(f.get(), 5);
}

TEST(FutureTest, ThenRunsOnceWithValueWhetherInstalledBeforeOrAfterCompletion) {
  for (bool complete_first : {false, true}) {
    auto* state = new FutureState<long long>();
    state->add_ref();
    Future<long long> f(state);
    int calls = 0;
    long long seen = 0;
    if (complete_first) state->set(9LL);
    f.then([&](Result<long long> r) {
      ++calls;
      seen = r.value();
    });
    EXPECT_FALSE(f.valid());
    if (!complete_first) state->set(9LL);
    state->release();
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(seen, 9);
  }
}

TEST(FutureTest, GetOnIoThreadThrowsDeadlockInsteadOfHanging) {
  auto* state = new FutureState<long long>();
  Future<long long> f(state);
  detail::IoThreadScope scope;
  EXPECT_THROW(f.get(), DeadlockError);
  auto r = f.result();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), errc::deadlock);
  state->set(1LL);
  EXPECT_EQ(f.get(), 1);  // a ready future never blocks, so it is fine on an I/O thread
}

TEST(FutureTest, WhenAllGathersInOrder) {
  std::vector<FutureState<long long>*> states;
  std::vector<Future<long long>> futures;
  for (int i = 0; i < 3; ++i) {
    states.push_back(new FutureState<long long>());
    states.back()->add_ref();
    futures.emplace_back(states.back());
  }
  auto all = when_all(std::move(futures));
  states[2]->set(2LL);
  states[0]->set(0LL);
  EXPECT_FALSE(all.ready());
  states[1]->fail(Error(errc::timeout, "t"));
  auto results = all.get();
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(*results[0], 0);
  EXPECT_FALSE(results[1].has_value());
  EXPECT_EQ(*results[2], 2);
  for (auto* s : states) s->release();
}

}  // namespace
}  // namespace redmux
