// The latency histograms' buckets and percentiles, and the Observer's table of command names
// and its hooks: a hook that throws is counted and the next one still runs.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "observe/observer.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

TEST(LatencyHistogramTest, BucketsAreContiguousAndAtMostAnEighthWide) {
  for (std::size_t bucket = 0; bucket + 1 < LatencyHistogram::kBuckets; ++bucket) {
    const std::uint64_t floor = LatencyHistogram::bucket_floor(bucket);
    const std::uint64_t next = LatencyHistogram::bucket_floor(bucket + 1);
    ASSERT_LT(floor, next) << bucket;
    EXPECT_EQ(LatencyHistogram::bucket_of(floor), bucket);
    EXPECT_EQ(LatencyHistogram::bucket_of(next - 1), bucket);
    if (floor >= 8) {
      EXPECT_LE(next - floor, floor / 8) << bucket;  // ≤ 12.5 % wide
    }
  }
  EXPECT_EQ(LatencyHistogram::bucket_of(~std::uint64_t{0}), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogramTest, PercentilesAreWithinTheBucketWidthOfTheTrueValues) {
  std::vector<std::int64_t> values;
  std::mt19937_64 random(15);
  std::lognormal_distribution<double> latency(std::log(50'000.0), 1.0);  // ~50 µs, long tail
  LatencyHistogram histogram;
  for (int i = 0; i < 100000; ++i) {
    values.push_back(static_cast<std::int64_t>(latency(random)));
    histogram.record(std::chrono::nanoseconds(values.back()));
  }
  std::sort(values.begin(), values.end());
  ASSERT_EQ(histogram.count(), values.size());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const auto exact =
        static_cast<double>(values[static_cast<std::size_t>(std::ceil(q * values.size())) - 1]);
    const auto read = static_cast<double>(histogram.percentile(q).count());
    EXPECT_GE(read, exact) << q;  // the bucket's end: never below
    EXPECT_LE(read, exact * 1.125 + 1) << q;
  }
  EXPECT_EQ(histogram.max().count(), values.back());
  EXPECT_EQ(histogram.percentile(1.0).count(), values.back());
  const LatencySummary summary = summarize(histogram);
  EXPECT_EQ(summary.count, 100000u);
  EXPECT_LE(summary.p50, summary.p90);
  EXPECT_LE(summary.p99, summary.p999);
  EXPECT_NE(to_string(summary).find("n=100000 p50="), std::string::npos) << to_string(summary);
}

TEST(LatencyHistogramTest, AnEmptyHistogramReadsZeroAndMergeAddsEverything) {
  LatencyHistogram a;
  EXPECT_EQ(a.percentile(0.99).count(), 0);
  LatencyHistogram b;
  a.record(10us);
  b.record(20us);
  b.record(30ms);
  a.merge(b);
  EXPECT_EQ(a.count(), 3u);
  EXPECT_EQ(a.max(), 30ms);
  EXPECT_EQ(a.sum(), 10us + 20us + 30ms);
}

Config with_histograms(bool on) {
  Config config;
  config.latency_histograms = on;
  return config;
}

TEST(LatencyHistogramTest, SinceAnEarlierSnapshotIsTheIntervalsLatencies) {
  LatencyHistogram before;
  before.record(100us);
  before.record(100us);
  LatencyHistogram now = before;
  now.record(1ms);
  now.record(3ms);
  const LatencyHistogram interval = now.since(before);
  EXPECT_EQ(interval.count(), 2u);
  EXPECT_EQ(interval.buckets()[LatencyHistogram::bucket_of(100'000)], 0u);
  EXPECT_GE(interval.percentile(0.5), 1ms);
  EXPECT_LT(interval.percentile(0.5), 1125us);
  EXPECT_GE(interval.percentile(0.99), 3ms);
  EXPECT_EQ(interval.sum(), 4ms);
  EXPECT_EQ(interval.max(), 3ms);
  // Snapshots taken the wrong way round have no interval: nothing, never a wrapped count.
  const LatencyHistogram backwards = before.since(now);
  EXPECT_EQ(backwards.count(), 0u);
  EXPECT_EQ(backwards.sum(), 0ns);
}

TEST(ObserverTest, EachCommandNameHasItsOwnHistogramsFoundByItsStorage) {
  Observer observer(with_histograms(true));
  static const std::string get = "GET";
  static const std::string set = "SET";
  LatencyPair* a = observer.command_latency(get);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(observer.command_latency(get), a);
  EXPECT_NE(observer.command_latency(set), a);
  a->to_reply.record(40us);
  a->to_delivery.record(45us);
  const Latencies latencies = observer.latencies();
  ASSERT_EQ(latencies.by_command.size(), 1u);  // SET recorded nothing: not listed
  ASSERT_NE(latencies.command("GET"), nullptr);
  EXPECT_EQ(latencies.command("GET")->to_reply.count(), 1u);
  EXPECT_EQ(latencies.command("get"), latencies.command("GET"));  // in any case
  EXPECT_EQ(latencies.command("SET"), nullptr);
}

// Latencies::command() and endpoint() point into the snapshot: asked of a temporary one
// (`mux->latencies().command("GET")`), the pointer would dangle, so that does not compile.
template <class L>
concept LooksUpIn = requires(L&& latencies) {
  std::forward<L>(latencies).command("GET");
  std::forward<L>(latencies).endpoint("host:6379");
};
static_assert(LooksUpIn<const Latencies&>);
static_assert(!LooksUpIn<Latencies>);
static_assert(!LooksUpIn<const Latencies>);

TEST(ObserverTest, PastItsTableDistinctNamesShareOneEntryAndNothingIsLost) {
  Observer observer(with_histograms(true));
  std::vector<std::string> names;
  names.reserve(700);
  for (int i = 0; i < 700; ++i) names.push_back("CMD" + std::to_string(i));
  for (const std::string& name : names) {
    LatencyPair* pair = observer.command_latency(name);
    ASSERT_NE(pair, nullptr);
    pair->to_reply.record(1us);
  }
  const Latencies latencies = observer.latencies();
  std::uint64_t total = 0;
  for (const LatencyStats& stats : latencies.by_command) total += stats.to_reply.count();
  EXPECT_EQ(total, 700u);
  ASSERT_NE(latencies.command("(other)"), nullptr);
  EXPECT_EQ(latencies.command("(other)")->to_reply.count(), 700u - 512u);
}

TEST(ObserverTest, OffItRecordsNothingAndWatchesNothingUntilAHookIsInstalled) {
  Observer observer(with_histograms(false));
  static const std::string get = "GET";
  EXPECT_EQ(observer.command_latency(get), nullptr);
  EXPECT_FALSE(observer.watching());
  int seen = 0;
  observer.set_command_hook([&](const CommandEvent&) { ++seen; });
  EXPECT_TRUE(observer.watching());
  observer.command_done(CommandEvent{});
  EXPECT_EQ(seen, 1);
  observer.set_command_hook(nullptr);
  EXPECT_FALSE(observer.watching());
  observer.command_done(CommandEvent{});
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(observer.latencies().by_command.empty());
}

TEST(ObserverTest, AHookThatThrowsIsCountedAndLoggedAndTheNextCallRunsAgain) {
  Observer observer(with_histograms(false));
  std::vector<std::string> logged;
  observer.set_log_hook(LogLevel::Error,
                        [&](const LogRecord& record) { logged.emplace_back(record.message); });
  int calls = 0;
  observer.set_command_hook([&](const CommandEvent&) {
    if (++calls == 1) throw std::runtime_error("boom");
  });
  observer.command_done(CommandEvent{});
  observer.command_done(CommandEvent{});
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(observer.hook_errors(), 1u);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0],
            "the command hook threw: boom (counted in hook_errors; the hook stays installed)");
}

Observer::Clock::time_point fake_now;
Observer::Clock::time_point read_fake_now() {
  const Observer::Clock::time_point now = fake_now;
  fake_now += 2ms;  // each read: 2 ms later (a hook that takes 2 ms)
  return now;
}

TEST(ObserverTest, ASlowHookIsCounted) {
  Observer observer(with_histograms(false));
  observer.set_clock(&read_fake_now);
  observer.set_write_hook([](const WriteEvent&) {});
  observer.write_done(WriteEvent{});
  EXPECT_EQ(observer.slow_hooks(), 1u);
}

// A frozen server under load makes every command slow: one record a second, the first at
// once, the ones between counted in the next, which a later command (slow or not) logs.
TEST(ObserverTest, SlowCommandsAreLoggedAtMostOnceASecondCountingThoseBetween) {
  Config config;
  config.slow_command_threshold = 5ms;
  Observer observer(config);
  std::vector<std::pair<std::string, std::string>> logged;  // (endpoint, message)
  observer.set_log_hook(LogLevel::Warning, [&](const LogRecord& record) {
    logged.emplace_back(record.endpoint, record.message);
  });
  const Observer::Clock::time_point t0 = Observer::Clock::now();
  const auto ended = [&](std::string_view name, int port, std::chrono::milliseconds created,
                         std::chrono::milliseconds took) {
    CommandEvent event;
    event.operation_name = name;
    event.server_address = "10.0.0.1";
    event.server_port = port;
    event.phases.created = t0 + created;
    event.phases.written = event.phases.created;
    event.phases.reply_read = event.phases.created + took;
    event.phases.delivered = event.phases.reply_read;
    observer.command_done(event);
  };
  ended("GET", 6379, 0ms, 8ms);  // logged at once
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].first, "10.0.0.1:6379");
  EXPECT_EQ(logged[0].second.rfind("slow command: GET took 8000 µs", 0), 0u) << logged[0].second;
  ended("SET", 6379, 300ms, 9ms);  // within the second: held
  ended("INCR", 6380, 500ms, 10ms);
  ended("GET", 6379, 900ms, 1ms);  // not slow, and under a second since the record
  EXPECT_EQ(logged.size(), 1u);
  ended("GET", 6379, 1100ms, 1ms);  // not slow: gives the record held back
  ASSERT_EQ(logged.size(), 2u);
  EXPECT_EQ(logged[1].first, "10.0.0.1:6380");  // the latest's
  EXPECT_EQ(logged[1].second.rfind("2 slow commands since the last such record; the latest: "
                                   "slow command: INCR took 10000 µs",
                                   0),
            0u)
      << logged[1].second;
  ended("GET", 6379, 1200ms, 1ms);  // nothing held: nothing to say
  EXPECT_EQ(logged.size(), 2u);
  EXPECT_EQ(observer.slow_commands(), 3u);  // every one counted, logged or not
}

TEST(ObserverTest, LogIsSilentByDefaultAndKeepsToItsLevel) {
  Observer observer(with_histograms(false));
  EXPECT_FALSE(observer.logs(LogLevel::Error));
  std::vector<LogLevel> levels;
  observer.set_log_hook(LogLevel::Warning, [&](const LogRecord& r) { levels.push_back(r.level); });
  EXPECT_FALSE(observer.logs(LogLevel::Info));
  EXPECT_TRUE(observer.logs(LogLevel::Warning));
  observer.log(LogLevel::Info, "h:1", "connected");
  observer.log(LogLevel::Warning, "h:1", "failed");
  EXPECT_EQ(levels, std::vector<LogLevel>{LogLevel::Warning});
  observer.set_log_hook(LogLevel::Off, nullptr);
  EXPECT_FALSE(observer.logs(LogLevel::Error));
}

TEST(ObserverTest, TimeoutsAreLoggedAtMostOnceASecondCountingThoseBetween) {
  SpacedLog log;
  const SpacedLog::Clock::time_point t0 = SpacedLog::Clock::now();
  // The first timeout is logged at once, as it is.
  EXPECT_EQ(log.note(t0, 1, "Timeout awaiting reply to GET"), "Timeout awaiting reply to GET");
  // Within the second: counted, not logged.
  EXPECT_EQ(log.note(t0 + 300ms, 5, "Timeout awaiting reply to SET"), "");
  EXPECT_EQ(log.note(t0 + 999ms, 2, "Timeout awaiting reply to INCR"), "");
  // A second on: one record for the 7 held back and this one.
  EXPECT_EQ(log.note(t0 + 1s, 1, "Timeout awaiting reply to DEL"),
            "8 commands timed out since the last such record; the latest: Timeout awaiting "
            "reply to DEL");
  // Several at once, the first record of another source: counted in it.
  SpacedLog other;
  EXPECT_EQ(other.note(t0, 3, "Timeout awaiting reply to GET"),
            "3 commands timed out; the latest: Timeout awaiting reply to GET");
  EXPECT_EQ(other.note(t0 + 2s, 0, ""), "");  // nothing new: nothing to say
  // One held back is logged by a later pass with nothing new, with its own message.
  EXPECT_EQ(other.note(t0 + 2500ms, 1, "Timeout awaiting reply to HGET"),
            "Timeout awaiting reply to HGET");
  EXPECT_EQ(other.note(t0 + 2800ms, 1, "Timeout awaiting reply to HGETALL"), "");
  EXPECT_EQ(other.note(t0 + 3s, 0, ""), "");
  EXPECT_EQ(other.note(t0 + 3500ms, 0, ""), "Timeout awaiting reply to HGETALL");
  // A record held back is given up at once when its source is about to be renamed, with
  // "since the last such record" (one was logged), and the spacing starts over.
  EXPECT_EQ(other.note(t0 + 3600ms, 2, "Timeout awaiting reply to GET"), "");
  EXPECT_EQ(other.flush(t0 + 3700ms),
            "2 commands timed out since the last such record; the latest: Timeout awaiting "
            "reply to GET");
  EXPECT_EQ(other.flush(t0 + 3800ms), "");  // nothing held back
  EXPECT_EQ(other.note(t0 + 3900ms, 1, "Timeout awaiting reply to SET"), "");
  EXPECT_EQ(other.note(t0 + 4700ms, 0, ""), "Timeout awaiting reply to SET");  // 1 s on
  EXPECT_EQ(other.note(t0 + 5s, 0, ""), "");
}

}  // namespace
}  // namespace redmux::detail
