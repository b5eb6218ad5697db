// Replies that arrive oddly or not at all, through a FaultProxy: one byte at a time, cut in the
// middle of a 100,000-command pipeline, cut in the middle of a large bulk string. Every reply
// that reaches a caller must be that caller's own and whole; every other caller gets an error.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "fault/fault_util.hpp"
#include "redmux/redmux.hpp"
#include "support/fault_proxy.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using fault::code_of;
using fault::OutcomeTally;

// `size` bytes that differ from any other (seed, size): a reply cut short, shifted or swapped
// with another caller's does not compare equal.
std::string pattern(std::size_t seed, std::size_t size) {
  std::string text = std::to_string(seed) + ":";
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + size;
  while (text.size() < size) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    text.push_back(static_cast<char>('a' + x % 26));
  }
  text.resize(size);
  return text;
}

TEST(DripTest, EveryReplyIsWholeAndOwnWhenRepliesArriveOneByteAtATime) {
  test::RedisServer server;
  test::FaultProxy proxy(server.port());
  auto mux = fault::connect_to(proxy.address(), ",asyncTimeout=30000");
  Database db = mux->database();
  const std::string big = pattern(424242, 100 * 1024);
  ASSERT_TRUE(db.set("drip:big", big).get());
  proxy.set_drip(true);
  const auto dripped_before = proxy.bytes_to_client();

  constexpr int kThreads = 8, kRounds = 20;
  constexpr std::size_t kSizes[] = {1, 10, 200, 2000};
  std::atomic<int> wrong{0};
  OutcomeTally tally;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Database db = mux->database();
      for (int i = 0; i < kRounds; ++i) {
        const std::size_t seed = static_cast<std::size_t>(t) * 1000 + static_cast<std::size_t>(i);
        const std::string payload = pattern(seed, kSizes[i % 4]);
        Result<std::string> echoed = db.echo(payload).result();
        tally.add(code_of(echoed));
        if (echoed && *echoed != payload) ++wrong;
        const std::string key = "drip:" + std::to_string(t);
        const std::string value = pattern(seed + 500, kSizes[(i + 1) % 4]);
        tally.add(code_of(db.set(key, value).result()));
        Result<std::optional<std::string>> got = db.get(key).result();
        tally.add(code_of(got));
        if (got && *got != std::optional<std::string>(value)) ++wrong;
        if (t == 0 && i % 10 == 0) {  // the 100 KB value, amid everybody else's replies
          Result<std::optional<std::string>> large = db.get("drip:big").result();
          tally.add(code_of(large));
          if (large && *large != std::optional<std::string>(big)) ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(tally.errors(), 0u) << tally.describe();
  EXPECT_EQ(tally.count(errc::ok), kThreads * kRounds * 3u + 2u);
  EXPECT_GT(proxy.bytes_to_client() - dripped_before, 2 * big.size());  // it went through the drip
}

// Sends 100,000 ECHOs of distinct payloads as deferred futures while the proxy cuts the
// connection, then checks every one: resolved before its deadline, and a value only when it is
// that command's own payload. `arm` runs before the first command; `strike` runs on a thread of
// its own while the commands are being issued (so the cut lands mid-pipeline however slow the
// build, e.g. under TSan).
template <class Arm, class Strike>
void pipeline_cut_keeps_replies_straight(Arm arm, Strike strike) {
  test::RedisServer server;
  test::FaultProxy proxy(server.port());
  auto mux = fault::connect_to(
      proxy.address(),
      ",asyncTimeout=30000,maxQueuedCommands=200000,reconnectBaseDelay=20,reconnectMaxDelay=100");
  Database db = mux->database();
  ASSERT_EQ(db.ping().get(), "PONG");

  constexpr int kCommands = 100000;
  std::vector<Future<std::string>> futures;
  futures.reserve(kCommands);
  arm(proxy);
  std::thread striker([&] { strike(proxy); });
  for (int i = 0; i < kCommands; ++i) futures.push_back(db.echo("p" + std::to_string(i)));
  striker.join();

  OutcomeTally tally;
  int wrong = 0, unresolved = 0;
  long long first_failure = -1, last_failure = -1;
  for (int i = 0; i < kCommands; ++i) {
    if (!futures[i].wait_for(45s)) {  // 30 s deadline, generous slack
      ++unresolved;
      continue;
    }
    Result<std::string> r = futures[i].result();
    tally.add(code_of(r));
    if (r && *r != "p" + std::to_string(i)) {
      if (++wrong <= 5) ADD_FAILURE() << "ECHO #" << i << " got \"" << *r << "\"";
    }
    if (!r) {
      if (first_failure < 0) first_failure = i;
      last_failure = i;
    }
  }
  const std::string observed = "outcomes: " + tally.describe() + "; failures from #" +
                               std::to_string(first_failure) + " to #" +
                               std::to_string(last_failure);
  fault::report(observed);
  SCOPED_TRACE(observed);
  EXPECT_EQ(unresolved, 0);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(proxy.pairs_cut(), 1u);
  // The cut hit commands in flight: the server got them, their replies never came.
  EXPECT_GT(tally.count(errc::outcome_unknown), 0u);
  EXPECT_GT(tally.count(errc::ok), 0u);
  EXPECT_EQ(tally.errors(), tally.count(errc::outcome_unknown) + tally.count(errc::not_sent));
  // The multiplexer is whole again.
  EXPECT_EQ(db.echo("after").get(), "after");
  EXPECT_GE(mux->status().reconnects, 1u);
}

TEST(PipelineCutTest, CutMidReplyInA100kPipeline) {
  pipeline_cut_keeps_replies_straight(
      // About half of the ~1.3 MB of replies, at a byte that is not a reply boundary.
      [](test::FaultProxy& proxy) { proxy.cut_after_bytes(600'007); }, [](test::FaultProxy&) {});
}

TEST(PipelineCutTest, CutAllInA100kPipeline) {
  pipeline_cut_keeps_replies_straight(
      [](test::FaultProxy& proxy) {
        // 20 ms per 64 KB chunk each way: the ~4 MB of requests and replies take about a
        // second, so the cut lands in the middle instead of after the last reply.
        proxy.set_delay(20ms);
      },
      [](test::FaultProxy& proxy) {
        EXPECT_TRUE(test::wait_until([&] { return proxy.bytes_to_client() > 600'000; }, 30s, 1ms));
        proxy.cut_all();
      });
}

TEST(BulkCutTest, LargeBulkReplyCutMidwayIsNeverDeliveredTruncated) {
  test::RedisServer server;
  test::FaultProxy proxy(server.port());
  // No idle PING: its reply could spend the proxy's byte budget before the GET's does.
  auto mux = fault::connect_to(
      proxy.address(),
      ",asyncTimeout=10000,heartbeatInterval=600000,reconnectBaseDelay=20,reconnectMaxDelay=100");
  Database db = mux->database();
  const std::string value = pattern(7, 1 << 20);
  ASSERT_TRUE(db.set("bulk:big", value).get());
  const std::size_t header = std::string("$1048576\r\n").size();
  // Inside the length line, just after it, in the middle, one byte short, between CR and LF.
  for (const std::size_t cut_at : {std::size_t{3}, header, header + 400'000,
                                   header + value.size() - 1, header + value.size() + 1}) {
    SCOPED_TRACE("cut after " + std::to_string(cut_at) + " bytes of the reply");
    ASSERT_TRUE(test::wait_until([&] { return mux->is_connected(); }, 10s));
    const auto cuts = proxy.pairs_cut();
    proxy.cut_after_bytes(cut_at);
    Result<std::optional<std::string>> r = db.get("bulk:big").result();
    EXPECT_EQ(proxy.pairs_cut(), cuts + 1)
        << (r ? "got a value" : r.error().message()) << "; " << mux->status_text();
    fault::report("cut after " + std::to_string(cut_at) + " bytes: " + fault::name_of(code_of(r)));
    if (r) {
      ASSERT_TRUE(r->has_value());
      EXPECT_EQ((*r)->size(), value.size());
      EXPECT_TRUE(**r == value) << "a different value was delivered";
    } else {
      EXPECT_EQ(r.error().code(), errc::outcome_unknown) << r.error().message();
    }
    // And after the reconnect, the whole value.
    Result<std::optional<std::string>> again = db.get("bulk:big").result();
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_TRUE(again->has_value() && **again == value);
  }
}

}  // namespace
}  // namespace redmux
