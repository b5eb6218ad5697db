// Memory stays bounded with the server gone and producers at full speed: maxQueuedCommands
// refuses what does not fit (queue-full errors) instead of buffering without limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "fault/fault_util.hpp"
#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fault::code_of;
using fault::OutcomeTally;

TEST(BoundedMemoryTest, ServerGoneProducersAtFullSpeedGetQueueFullNotUnboundedMemory) {
  test::RedisServer server;
  auto mux = fault::connect_to(server.address(),
                               ",abortConnect=false,asyncTimeout=5000,maxQueuedCommands=10000,"
                               "reconnectBaseDelay=20,reconnectMaxDelay=100");
  Database db = mux->database();
  ASSERT_EQ(db.ping().get(), "PONG");
  server.kill();
  ASSERT_TRUE(test::wait_until([&] { return !mux->is_connected(); }, 10s));

  // Unbounded, 2 s of the producers would hold hundreds of MB (a command with its 256-byte
  // value is ~300 bytes; refused at once, they submit millions of commands in 2 s). Bounded,
  // the 10,000 commands maxQueuedCommands admits are ~3 MB. Admitted commands are held for
  // asyncTimeout=5 s, longer than the run, so the limit is reached even by a slow (sanitized)
  // build.
  constexpr long long kBoundKib = 200 * 1024;
  const std::string value(256, 'm');
  const long long rss_before = fault::resident_kib();
  ASSERT_GT(rss_before, 0);
  std::atomic<bool> stop{false};
  OutcomeTally fire_and_forget, deferred;
  std::atomic<long long> submitted{0};
  auto producer = [&](bool wait_for_reply, OutcomeTally& tally) {
    Database db = mux->database();
    for (long long i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      const std::string key = "mem:" + std::to_string(i % 1000);
      Future<bool> f =
          wait_for_reply ? db.set(key, value) : db.set(key, value, Flags::FireAndForget);
      if (f.ready()) tally.add(code_of(f.result()));  // refused at once (or fire-and-forget)
      ++submitted;
      // Not ready: admitted and held (until it times out); the future is dropped here.
    }
  };
  std::thread a(producer, false, std::ref(fire_and_forget));
  std::thread b(producer, true, std::ref(deferred));
  long long rss_peak = rss_before;
  const auto start = Clock::now();
  test::wait_until(
      [&] {
        rss_peak = std::max(rss_peak, fault::resident_kib());
        return Clock::now() - start >= 2s;  // the fault's duration, not a synchronisation
      },
      10s, 20ms);
  stop = true;
  a.join();
  b.join();
  rss_peak = std::max(rss_peak, fault::resident_kib());

  const std::string observed = "submitted " + std::to_string(submitted.load()) +
                               "; fire-and-forget: " + fire_and_forget.describe() +
                               "; deferred refused at once: " + deferred.describe() + "; RSS " +
                               std::to_string(rss_before) + " KiB -> peak " +
                               std::to_string(rss_peak) + " KiB";
  fault::report(observed);
  SCOPED_TRACE(observed);
  EXPECT_GT(fire_and_forget.count(errc::queue_full), 0u);
  EXPECT_GT(deferred.count(errc::queue_full), 0u);
  EXPECT_GT(mux->status().queue_full, 0u);
  EXPECT_LT(rss_peak - rss_before, kBoundKib);
  EXPECT_LE(mux->status().outstanding, 10000u);

  // Back to normal once the server is: held commands expire, new ones run.
  server.restart();
  ASSERT_TRUE(test::wait_until([&] { return mux->is_connected(); }, 10s)) << mux->status_text();
  EXPECT_TRUE(test::wait_until([&] { return mux->status().outstanding == 0; }, 10s))
      << mux->status_text();
  EXPECT_EQ(db.set("mem:after", "ok").get(), true);
}

}  // namespace
}  // namespace redmux
