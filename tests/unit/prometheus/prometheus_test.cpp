// The Prometheus exposition of a status and a set of histograms built by hand: names,
// labels, exact cumulative bucket counts, the commands-per-write gauge, the errors by kind;
// and a collector whose multiplexer is gone yields nothing.
#include <gtest/gtest.h>

#include <prometheus/text_serializer.h>

#include <string>

#include "redmux/prometheus.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;

std::string exposition(const MultiplexerStatus& status, const Latencies& latencies,
                       const std::string& client = {}) {
  return ::prometheus::TextSerializer().Serialize(prometheus_families(status, latencies, client));
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

MultiplexerStatus sample_status() {
  MultiplexerStatus status;
  status.commands = 1200;
  status.replies = 1190;
  status.writes = 100;
  status.commands_written = 1250;
  status.timeouts = 3;
  status.queue_full = 2;
  status.in_flight = 7;
  ConnectionStatus a;
  a.endpoint = "127.0.0.1:6379";
  a.purpose = ConnectionStatus::Purpose::Interactive;
  a.state = ConnectionStatus::State::Ready;
  a.writes = 100;
  a.commands_written = 1250;
  a.in_flight = 7;
  ConnectionStatus b = a;
  b.purpose = ConnectionStatus::Purpose::Subscription;
  b.state = ConnectionStatus::State::Reconnecting;
  b.writes = 0;
  b.commands_written = 0;
  b.in_flight = 0;
  status.per_connection = {a, b};
  return status;
}

TEST(PrometheusTest, CountersGaugesAndConnectionsUnderConventionalNames) {
  const std::string text = exposition(sample_status(), Latencies{});
  EXPECT_TRUE(has_line(text, "redmux_commands_total 1200")) << text;
  EXPECT_TRUE(has_line(text, "redmux_writes_total 100")) << text;
  EXPECT_TRUE(has_line(text, "redmux_commands_per_write 12.5")) << text;
  EXPECT_TRUE(has_line(text, "redmux_errors_total{kind=\"timeout\"} 3")) << text;
  EXPECT_TRUE(has_line(text, "redmux_errors_total{kind=\"queue_full\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "redmux_in_flight_commands 7")) << text;
  EXPECT_TRUE(has_line(text, "redmux_connections{purpose=\"interactive\",state=\"ready\"} 1"))
      << text;
  EXPECT_TRUE(
      has_line(text, "redmux_connections{purpose=\"subscription\",state=\"reconnecting\"} 1"))
      << text;
  // Every state of a purpose present has its series, 0 when no connection is in it.
  EXPECT_TRUE(
      has_line(text, "redmux_connections{purpose=\"interactive\",state=\"reconnecting\"} 0"))
      << text;
  EXPECT_TRUE(has_line(text, "redmux_connections{purpose=\"subscription\",state=\"ready\"} 0"))
      << text;
  EXPECT_EQ(text.find("purpose=\"dedicated\""), std::string::npos) << text;
  EXPECT_TRUE(has_line(text,
                       "redmux_connection_commands_per_write{endpoint=\"127.0.0.1:6379\","
                       "purpose=\"interactive\"} 12.5"))
      << text;
  EXPECT_NE(text.find("# TYPE redmux_commands_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE redmux_commands_per_write gauge"), std::string::npos);
  // Without histograms (latencyHistograms off), no histogram family.
  EXPECT_EQ(text.find("redmux_command_duration_seconds"), std::string::npos);
}

TEST(PrometheusTest, HistogramBucketsAreCumulativeAndExact) {
  Latencies latencies;
  LatencyStats incr;
  incr.name = "INCR";
  // 3 under 50 µs; 52 µs, whose bucket (49.152 … 53.248 µs) straddles 50 µs and so belongs
  // above the first bound (49.152 µs), not under it; 2 between 100 µs and 250 µs; 1 of 2 s.
  for (auto latency : {10us, 20us, 40us, 52us, 120us, 200us}) incr.to_reply.record(latency);
  incr.to_reply.record(2s);
  incr.to_delivery = incr.to_reply;
  latencies.by_command.push_back(incr);
  LatencyStats endpoint = incr;
  endpoint.name = "127.0.0.1:6379";
  latencies.by_endpoint.push_back(endpoint);
  const std::string text = exposition(MultiplexerStatus{}, latencies, "api");
  EXPECT_NE(text.find("# TYPE redmux_command_duration_seconds histogram"), std::string::npos);
  EXPECT_TRUE(
      has_line(text, "redmux_command_duration_seconds_count{client=\"api\",command=\"INCR\"} 7"))
      << text;
  EXPECT_TRUE(has_line(
      text,
      "redmux_command_duration_seconds_bucket{client=\"api\",command=\"INCR\",le=\"+Inf\"} 7"))
      << text;
  EXPECT_TRUE(has_line(text,
                       "redmux_endpoint_duration_seconds_count{client=\"api\",endpoint=\"127.0.0."
                       "1:6379\"} 7"))
      << text;
  // Bounds: redmux's bucket boundaries at or just below the round values.
  const std::vector<double>& bounds = prometheus_bucket_bounds();
  ASSERT_EQ(bounds.size(), 18u);
  EXPECT_DOUBLE_EQ(bounds[0], 49152e-9);
  // Cumulative counts at each bound, from the families themselves.
  const auto families = prometheus_families(MultiplexerStatus{}, latencies);
  const ::prometheus::MetricFamily* reply = nullptr;
  for (const auto& family : families) {
    if (family.name == "redmux_command_duration_seconds") reply = &family;
  }
  ASSERT_NE(reply, nullptr);
  const auto& buckets = reply->metric.at(0).histogram.bucket;
  ASSERT_EQ(buckets.size(), bounds.size());
  EXPECT_EQ(buckets[0].cumulative_count, 3u);   // ≤ 49.152 µs
  EXPECT_EQ(buckets[1].cumulative_count, 4u);   // ≤ ~100 µs
  EXPECT_EQ(buckets[2].cumulative_count, 6u);   // ≤ ~250 µs
  EXPECT_EQ(buckets[13].cumulative_count, 6u);  // ≤ ~1 s
  EXPECT_EQ(buckets[14].cumulative_count, 7u);  // ≤ ~2.5 s
  for (std::size_t i = 1; i < buckets.size(); ++i) {
    EXPECT_GE(buckets[i].cumulative_count, buckets[i - 1].cumulative_count);
    EXPECT_GT(buckets[i].upper_bound, buckets[i - 1].upper_bound);
  }
  EXPECT_NEAR(reply->metric.at(0).histogram.sample_sum, 2.000442, 1e-6);
}

TEST(PrometheusTest, ACollectorWhoseMultiplexerIsGoneYieldsNothing) {
  const PrometheusCollector collector(std::shared_ptr<Multiplexer>{});
  EXPECT_TRUE(collector.Collect().empty());
  EXPECT_EQ(text_exposition({}), "");
}

}  // namespace
}  // namespace redmux
