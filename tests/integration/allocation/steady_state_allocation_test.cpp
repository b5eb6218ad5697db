// The cost rule, checked: no heap allocation per command, on the caller's side or the I/O
// thread, once the connection is warmed up (a command's state comes from the per-thread pool
// of src/core/state_pool.cpp). Its own binary, because it replaces the global operator new
// to count allocations per thread.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/counting_new.hpp"  // replaces operator new for this binary
#include "support/redis_server.hpp"

namespace redmux {
namespace {

using test::RedisServer;

struct Counted {
  long caller = 0;  // on the test's thread
  long others = 0;  // on every other thread: the I/O thread (nothing else runs)
};

template <class Work>
Counted count_allocations(Work work) {
  const long all_before = test::allocations();
  const long mine_before = test::allocations_here();
  work();
  const long mine = test::allocations_here() - mine_before;
  return {mine, test::allocations() - all_before - mine};
}

constexpr int kCommands = 2000;

void await_each(Database& db, const std::string& key) {
  for (int i = 0; i < kCommands; ++i) db.incr(key).get();
}

void issue_then_await(Database& db, std::vector<Future<long long>>& futures,
                      const std::string& key) {
  futures.clear();  // capacity kept: the vector itself does not allocate per round
  for (int i = 0; i < kCommands; ++i) futures.push_back(db.incr(key));
  for (auto& future : futures) future.get();
}

// A slab of the state pool holds 512 states of 128 bytes: allocations that are not per
// command (a new slab, a queue buffer regrowing) stay far below this.
constexpr long kNotPerCommand = kCommands / 100;

TEST(SteadyStateAllocationTest, NonePerCommandOnEitherThread) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",name=alloc-test");
  Database db = mux->database();
  const std::string key = "counter";  // built once: the key is the caller's, not redmux's
  std::vector<Future<long long>> futures;
  futures.reserve(kCommands);
  for (int round = 0; round < 3; ++round) {  // warm-up: buffers and arenas reach their size
    await_each(db, key);
    issue_then_await(db, futures, key);
  }

  const Counted each = count_allocations([&] { await_each(db, key); });
  EXPECT_LE(each.caller, kNotPerCommand)
      << "caller-side allocations for " << kCommands << " commands awaited one by one";
  // The I/O thread: none per command; a buffer of its own may regrow the same way.
  EXPECT_LE(each.others, kNotPerCommand)
      << "I/O-thread allocations for " << kCommands << " commands awaited one by one";

  const Counted burst = count_allocations([&] { issue_then_await(db, futures, key); });
  // The submission queue's two buffers (bytes, commands) may regrow by doubling when a burst
  // outgrows what the connection kept between bursts — it gives large buffers back — which
  // is about 2 × log2(2000) = 22 allocations per burst at worst (seen when the I/O thread is
  // slow to take the queue), not one per command.
  EXPECT_LE(burst.caller, kNotPerCommand + 22)
      << "caller-side allocations for a burst of " << kCommands;
  EXPECT_LE(burst.others, kNotPerCommand) << "I/O-thread allocations for a burst of " << kCommands;
  EXPECT_EQ(db.get(key).get(), std::to_string(8 * kCommands));  // every INCR ran once
  std::printf(
      "allocations per command: awaited one by one caller %.3f, I/O thread %.3f; "
      "burst caller %.3f, I/O thread %.3f\n",
      double(each.caller) / kCommands, double(each.others) / kCommands,
      double(burst.caller) / kCommands, double(burst.others) / kCommands);
}

}  // namespace
}  // namespace redmux
