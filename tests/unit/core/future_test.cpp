#include "redmux/future.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

TEST(FutureTest, GetAndResultConsumeTheFutureLikeStdFuture) {
  // A second read must not hand out a moved-from value (an empty string, a blank error).
  Future<std::string> value = Future<std::string>::ready_with(std::string("hello"));
  EXPECT_EQ(value.get(), "hello");
  EXPECT_FALSE(value.valid());
  EXPECT_THROW(value.get(), InvalidArgumentError);
  EXPECT_EQ(value.result().error().code(), errc::invalid_argument);

  Future<std::string> failed =
      Future<std::string>::ready_with(Error(errc::timeout, "Timeout awaiting reply to GET"));
  EXPECT_THROW(failed.get(), TimeoutError);
  EXPECT_FALSE(failed.valid());  // consumed by the get() that threw too

  Future<long long> result = Future<long long>::ready_with(Error(errc::timeout, "too late"));
  EXPECT_EQ(result.result().error().message(), "too late");
  EXPECT_FALSE(result.valid());
  EXPECT_EQ(result.result().error().code(), errc::invalid_argument);

  Future<void> done = Future<void>::ready_with(Result<void>());
  done.get();
  EXPECT_FALSE(done.valid());
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

// Completes `state` from another thread after `delay`; returns that thread.
std::thread complete_later(FutureState<long long>* state, std::chrono::microseconds delay) {
  state->add_ref();  // the completing thread's reference
  return std::thread([state, delay] {
    std::this_thread::sleep_for(delay);
    state->set(1LL);
    state->release();
  });
}

// Blocks in get() on a command completed `delay` later (under the current wait policy).
void wait_once(std::chrono::microseconds delay) {
  auto* state = new FutureState<long long>();
  Future<long long> f(state);
  std::thread io = complete_later(state, delay);
  EXPECT_EQ(f.get(), 1);
  io.join();
}

std::chrono::nanoseconds thread_cpu_time() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

struct WaitPolicyScope {
  explicit WaitPolicyScope(WaitPolicy policy) { set_wait_policy(policy); }
  ~WaitPolicyScope() { set_wait_policy(WaitPolicy::Adaptive); }
};

// Makes the recent waits look like `typical` each (the average forgets older ones).
void set_typical_wait(std::chrono::nanoseconds typical) {
  for (int i = 0; i < 400; ++i) detail::record_wait(typical);
}

TEST(FutureWaitTest, AdaptiveBudgetIsFourRecentWaitsAndNoneForSlowReplies) {
  set_typical_wait(std::chrono::microseconds(1000));
  EXPECT_NEAR(detail::wait_spin_budget().count(), 4'000'000, 50'000);
  set_typical_wait(std::chrono::microseconds(250));
  EXPECT_NEAR(detail::wait_spin_budget().count(), 1'000'000, 50'000);
  // Replies typically slower than 5 ms: no yielding at all.
  set_typical_wait(std::chrono::milliseconds(6));
  EXPECT_EQ(detail::wait_spin_budget(), std::chrono::nanoseconds::zero());
  set_typical_wait(std::chrono::microseconds(500));
  EXPECT_NEAR(detail::wait_spin_budget().count(), 2'000'000, 50'000);
}

TEST(FutureWaitTest, EachThreadsBudgetFollowsItsOwnWaits) {
  // A thread's budget comes from its own waits: another thread whose replies take 6 ms does
  // not stop this one's yielding. A new thread starts from what the others last published.
  set_typical_wait(std::chrono::microseconds(250));
  const auto mine = detail::wait_spin_budget();
  ASSERT_NEAR(mine.count(), 1'000'000, 50'000);
  std::thread slow([] {
    EXPECT_NEAR(detail::wait_spin_budget().count(), 1'000'000, 50'000);
    set_typical_wait(std::chrono::milliseconds(6));
    EXPECT_EQ(detail::wait_spin_budget(), std::chrono::nanoseconds::zero());
  });
  slow.join();
  EXPECT_EQ(detail::wait_spin_budget(), mine);
  std::thread next([] { EXPECT_EQ(detail::wait_spin_budget(), std::chrono::nanoseconds::zero()); });
  next.join();
  set_typical_wait(std::chrono::microseconds(100));  // publish a quick value again
}

TEST(FutureWaitTest, BlockingWaitsFeedTheBudget) {
  WaitPolicyScope adaptive(WaitPolicy::Adaptive);
  set_typical_wait(std::chrono::microseconds(100));
  const auto before = detail::wait_spin_budget();
  // One 20 ms wait moves the average a sixteenth of the way: to ≈ 1.3 ms (more if the
  // machine is slow to wake this thread, but below the 5 ms cut unless the wait took 80 ms).
  wait_once(std::chrono::milliseconds(20));
  const auto after = detail::wait_spin_budget();
  EXPECT_GT(after, before + std::chrono::milliseconds(2));
  // Under WaitPolicy::Sleep waits are not timed.
  set_wait_policy(WaitPolicy::Sleep);
  wait_once(std::chrono::milliseconds(20));
  EXPECT_EQ(detail::wait_spin_budget(), after);
}

TEST(FutureWaitTest, AdaptiveWaitDoesNotBurnAnIdleCpuWhileTheReplyIsSlow) {
  WaitPolicyScope adaptive(WaitPolicy::Adaptive);
  set_typical_wait(std::chrono::milliseconds(2));
  const auto budget = detail::wait_spin_budget();  // ≈ 8 ms
  ASSERT_GT(budget, std::chrono::milliseconds(4));
  // A 400 ms wait. Yields that find nobody else to run stop the spin after 50 µs; on a busy
  // machine the yields hand the CPU to others and cost this thread little. Either way the
  // thread uses far less CPU than spinning through its budget (let alone the whole wait).
  const auto cpu_before = thread_cpu_time();
  wait_once(std::chrono::milliseconds(400));
  EXPECT_LT(thread_cpu_time() - cpu_before, budget / 2);
}

TEST(FutureWaitTest, WaitForKeepsItsDeadlineWhileYielding) {
  WaitPolicyScope adaptive(WaitPolicy::Adaptive);
  auto* state = new FutureState<long long>();
  Future<long long> f(state);
  // Busy threads, one per CPU, so that the wait's yields find others to run and keep
  // yielding (on an idle CPU it would give up after 50 µs anyway).
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i) {
    busy.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  // A 1 ms wait_for returns after 1 ms (plus the time until the scheduler runs this thread
  // again, a few ms on an overloaded machine), not after the ≈ 16 ms spin budget (the best
  // of three, so that one scheduling hiccup does not decide).
  auto best = std::chrono::steady_clock::duration::max();
  for (int i = 0; i < 3; ++i) {
    set_typical_wait(std::chrono::milliseconds(4));
    ASSERT_GT(detail::wait_spin_budget(), std::chrono::milliseconds(15));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(f.wait_for(std::chrono::milliseconds(1)));
    best = std::min(best, std::chrono::steady_clock::now() - start);
  }
  stop = true;
  for (auto& t : busy) t.join();
  EXPECT_GE(best, std::chrono::milliseconds(1));
  EXPECT_LT(best, std::chrono::milliseconds(12));
  state->set(3LL);
  EXPECT_TRUE(f.wait_for(std::chrono::milliseconds(0)));
  EXPECT_EQ(f.get(), 3);
}

// Voluntary context switches of the calling thread so far: a futex sleep is one, a
// sched_yield() that hands the CPU to another thread is not (it counts as involuntary).
long voluntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nvcsw;
}

TEST(FutureWaitTest, AdaptiveWaitSleepsAfterTwoTurnsOfTheCpu) {
  WaitPolicyScope adaptive(WaitPolicy::Adaptive);
  // Busy threads, one per CPU, so that every yield hands the CPU to one of them (a turn).
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()); ++i) {
    busy.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  // The reply comes after 15 ms, inside the ≈ 19.6 ms spin budget: without the cap on turns
  // the waiter would yield until it arrives and never sleep. With it, the waiter sleeps after
  // two turns (a few ms even on a loaded machine); the best of three attempts decides.
  long slept = 0;
  for (int i = 0; i < 3 && slept == 0; ++i) {
    set_typical_wait(std::chrono::microseconds(4900));
    ASSERT_GT(detail::wait_spin_budget(), std::chrono::milliseconds(19));
    const long before = voluntary_switches();
    wait_once(std::chrono::milliseconds(15));
    slept = voluntary_switches() - before;
  }
  stop = true;
  for (auto& t : busy) t.join();
  EXPECT_GE(slept, 1) << "the waiter yielded through its whole budget instead of sleeping";
}

TEST(FutureWaitTest, CompletionCountsTheBlockedThreadsItReleases) {
  for (const WaitPolicy policy : {WaitPolicy::Adaptive, WaitPolicy::Sleep}) {
    WaitPolicyScope scope(policy);
    (void)detail::take_released_waiters();
    // Nobody waits: completing releases no one.
    auto* unwaited = new FutureState<long long>();
    Future<long long> f0(unwaited);
    unwaited->set(1LL);
    EXPECT_EQ(detail::take_released_waiters(), 0u);
    EXPECT_EQ(f0.get(), 1);  // ready already: this wait blocks nobody
    // A thread blocked in get(): the completion on this thread counts it, once.
    auto* waited = new FutureState<long long>();
    waited->add_ref();
    long long got = 0;
    std::thread waiter([waited, &got] {
      Future<long long> f(waited);
      got = f.get();
    });
    while (!waited->waited_on()) std::this_thread::yield();
    waited->set(7LL);
    EXPECT_EQ(detail::take_released_waiters(), 1u)
        << (policy == WaitPolicy::Sleep ? "Sleep" : "Adaptive");
    EXPECT_EQ(detail::take_released_waiters(), 0u);  // taking it reset the count
    waiter.join();
    waited->release();
    EXPECT_EQ(got, 7);
  }
}

TEST(FutureWaitTest, EveryPolicyDeliversToManyWaitingThreads) {
  for (const WaitPolicy policy : {WaitPolicy::Adaptive, WaitPolicy::Sleep}) {
    WaitPolicyScope scope(policy);
    EXPECT_EQ(wait_policy(), policy);
    constexpr int kThreads = 32, kRounds = 50;
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kRounds; ++i) {
          auto* state = new FutureState<long long>();
          state->add_ref();
          Future<long long> f(state);
          std::thread io([state, value = t * 1000 + i] {
            state->set(static_cast<long long>(value));
            state->release();
          });
          if (f.get() != t * 1000 + i) ++wrong;
          io.join();
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0) << (policy == WaitPolicy::Sleep ? "Sleep" : "Adaptive");
  }
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

// An empty future among them is refused, and nothing is left behind (the AddressSanitizer
// build, whose states bypass the pool, reports a leak of the gathered state otherwise).
TEST(FutureTest, WhenAllRefusesAnEmptyFuture) {
  auto* state = new FutureState<long long>();
  state->add_ref();
  std::vector<Future<long long>> futures;
  futures.emplace_back(state);
  futures.emplace_back();
  try {
    (void)when_all(std::move(futures));
    ADD_FAILURE() << "when_all accepted an empty future";
  } catch (const RedmuxError& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
  }
  state->set(7LL);  // its future is gone; the state lives on this test's reference
  EXPECT_TRUE(state->ready());
  state->release();
}

// The waiter thread's state letter in /proc ('S': asleep, here on the futex).
char thread_state(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const std::size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
}

// A thread asleep in get() (WaitPolicy::Sleep) on its own state; returns once it sleeps.
struct Sleeper {
  FutureState<long long>* state = new FutureState<long long>();
  std::atomic<pid_t> tid{0};
  std::atomic<bool> returned{false};
  long long got = 0;
  std::thread thread;

  Sleeper() {
    state->add_ref();  // the "connection's" reference
    thread = std::thread([this] {
      tid = static_cast<pid_t>(::syscall(SYS_gettid));
      Future<long long> f(state);
      got = f.get();
      returned = true;
    });
    while (tid.load() == 0 || !state->waited_on() || thread_state(tid.load()) != 'S') {
      std::this_thread::yield();
    }
  }
  void complete(long long value) {
    state->set(value);
    state->release();
  }
};

TEST(FutureWaitTest, ASleeperReleasedUnderDeferWakesWakesWhenTheOutermostScopeEnds) {
  WaitPolicyScope sleep(WaitPolicy::Sleep);
  Sleeper sleeper;
  {
    const detail::CommandState::DeferWakes outer;
    {
      const detail::CommandState::DeferWakes inner;  // an inner scope ending wakes nobody
      sleeper.complete(5);
    }
    // Asleep until the scope ends: 50 ms in which it would have returned if woken.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(sleeper.returned.load()) << "woken before the outermost DeferWakes ended";
    EXPECT_EQ(thread_state(sleeper.tid.load()), 'S');
  }
  sleeper.thread.join();
  EXPECT_EQ(sleeper.got, 5);
}

TEST(FutureWaitTest, DeferWakesWakesEveryWaiterEvenBeyondItsCapacityAndWithoutAScope) {
  WaitPolicyScope sleep(WaitPolicy::Sleep);
  // More sleepers than the deferred list holds (64): a full list is flushed at once, so
  // every one is woken by the scope's end at the latest.
  constexpr int kSleepers = 100;
  std::vector<std::unique_ptr<Sleeper>> sleepers;
  for (int i = 0; i < kSleepers; ++i) sleepers.push_back(std::make_unique<Sleeper>());
  {
    const detail::CommandState::DeferWakes wakes;
    for (int i = 0; i < kSleepers; ++i) sleepers[i]->complete(i);
    // The first 64 were woken when the 65th needed room: they return inside the scope.
    for (int i = 0; i < 64; ++i) sleepers[i]->thread.join();
  }
  for (int i = 64; i < kSleepers; ++i) sleepers[i]->thread.join();
  for (int i = 0; i < kSleepers; ++i) EXPECT_EQ(sleepers[i]->got, i);
  // Without a scope a completion wakes its sleeper at once.
  Sleeper lone;
  lone.complete(9);
  lone.thread.join();
  EXPECT_EQ(lone.got, 9);
}

TEST(FutureWaitTest, AStateWhoseWakeIsDeferredOutlivesItsFutureUntilTheWake) {
  WaitPolicyScope sleep(WaitPolicy::Sleep);
  // The waiter gives up after 100 ms, finds the result there and drops its future while
  // the wake is still deferred; the deferred list's own reference keeps the state alive
  // (under AddressSanitizer, which allocates every state on its own, the flush would
  // otherwise touch freed memory).
  auto* state = new FutureState<long long>();
  state->add_ref();  // the "connection's" reference
  std::atomic<pid_t> tid{0};
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    Future<long long> f(state);
    EXPECT_TRUE(f.wait_for(std::chrono::milliseconds(100)));
    EXPECT_EQ(f.get(), 3);
    done = true;
  });
  while (tid.load() == 0 || !state->waited_on() || thread_state(tid.load()) != 'S') {
    std::this_thread::yield();
  }
  {
    const detail::CommandState::DeferWakes wakes;
    state->set(3LL);
    state->release();  // the connection lets go, as after a delivery
    waiter.join();     // timed out, saw the result, dropped the future
    EXPECT_TRUE(done.load());
  }
}

}  // namespace
}  // namespace redmux
