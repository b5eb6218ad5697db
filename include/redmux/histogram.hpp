// LatencyHistogram: a snapshot of one latency distribution the multiplexer recorded, in
// log-linear buckets (exact below 8 ns, then 8 buckets per power of two: each bucket is at
// most 12.5 % wide, so a percentile read from it is within 12.5 % of the true value).
// Latencies: every histogram of a multiplexer (latencyHistograms=true), per command name
// and per endpoint, each as time to reply and time until delivered (docs/observability.md).
//
// Plain values: copy them, read them from any thread. The multiplexer records into its own
// lock-free counters on the I/O threads; Multiplexer::latencies() copies them into these.
#pragma once

#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redmux {

class LatencyHistogram {
 public:
  /// Buckets 0 … 7 hold 0 … 7 ns; from 8 ns on, 8 buckets per power of two up to 2^64 ns.
  static constexpr std::size_t kBuckets = 8 + 61 * 8;

  /// The bucket a latency of `ns` nanoseconds falls into.
  static constexpr std::size_t bucket_of(std::uint64_t ns) noexcept {
    if (ns < 8) return static_cast<std::size_t>(ns);
    const int octave = static_cast<int>(std::bit_width(ns)) - 1;  // 3 … 63
    const auto octave_start = static_cast<std::uint64_t>(octave - 2) << 3;
    return static_cast<std::size_t>(octave_start + ((ns >> (octave - 3)) & 7));
  }
  /// The smallest latency (ns) of bucket `bucket`; the next bucket's is its end.
  static constexpr std::uint64_t bucket_floor(std::size_t bucket) noexcept {
    if (bucket < 8) return bucket;
    const std::size_t octave = (bucket >> 3) + 2;
    return (8 + (bucket & 7)) << (octave - 3);
  }

  LatencyHistogram() : buckets_(kBuckets, 0) {}

  /// Latencies recorded.
  std::uint64_t count() const noexcept { return count_; }
  /// Their sum (for a mean, or Prometheus's _sum).
  std::chrono::nanoseconds sum() const noexcept { return std::chrono::nanoseconds(sum_); }
  /// The largest, exactly.
  std::chrono::nanoseconds max() const noexcept { return std::chrono::nanoseconds(max_); }
  /// The latency below which a fraction `quantile` (0 … 1) of them fell: the end of the
  /// bucket that holds it, never above max(). Zero when nothing was recorded.
  std::chrono::nanoseconds percentile(double quantile) const noexcept;
  /// Counts per bucket (kBuckets of them; bucket_floor() gives their bounds).
  const std::vector<std::uint64_t>& buckets() const noexcept { return buckets_; }

  /// Adds one latency (for histograms built by hand, e.g. a benchmark's own).
  void record(std::chrono::nanoseconds latency) noexcept;
  /// Adds every latency of `other` (e.g. one command's histograms from several endpoints).
  void merge(const LatencyHistogram& other) noexcept;
  /// The latencies recorded between an `earlier` snapshot of the same histogram and this
  /// one (an interval's, e.g. one second of `redmux-cli --stat`): counts and sum are the
  /// differences; max() stays this snapshot's, the largest the interval can have had.
  LatencyHistogram since(const LatencyHistogram& earlier) const;
  /// Adds `count` latencies in bucket `bucket` (a snapshot being built): REQUIRES bucket <
  /// kBuckets.
  void add_bucket(std::size_t bucket, std::uint64_t count) noexcept {
    buckets_[bucket] += count;
    count_ += count;
  }
  void set_totals(std::uint64_t sum_ns, std::uint64_t max_ns) noexcept {
    sum_ = sum_ns;
    max_ = max_ns;
  }

 private:
  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t max_ = 0;
};

/// The usual percentiles of one histogram.
struct LatencySummary {
  std::uint64_t count = 0;
  std::chrono::nanoseconds p50{0}, p90{0}, p99{0}, p999{0}, max{0};
};
LatencySummary summarize(const LatencyHistogram& histogram) noexcept;
/// "n=1200 p50=41µs p90=58µs p99=120µs p99.9=310µs max=1.2ms" (status_text() prints this).
std::string to_string(const LatencySummary& summary);

/// One command name's, or one endpoint's, latencies. Both are measured from the moment the
/// command was accepted (its call returned a future): `to_reply` until its reply was read
/// from the socket, `to_delivery` until the future held the value (a waiting caller woken,
/// a then() continuation run).
struct LatencyStats {
  std::string name;  ///< the command ("GET", "CLIENT KILL") or the endpoint ("host:port")
  LatencyHistogram to_reply;
  LatencyHistogram to_delivery;
};

/// Every histogram of a multiplexer; empty unless latencyHistograms=true.
struct Latencies {
  std::vector<LatencyStats> by_command;   ///< in order of name
  std::vector<LatencyStats> by_endpoint;  ///< in order of endpoint
  /// The command's entry (its name in any case: "incr" finds INCR's) or the endpoint's, or
  /// null when none was recorded.
  /// It points into this Latencies, so a temporary one (`mux->latencies().command(...)`)
  /// does not compile: keep the snapshot while you read it.
  const LatencyStats* command(std::string_view name) const& noexcept;
  const LatencyStats* endpoint(std::string_view endpoint) const& noexcept;
  const LatencyStats* command(std::string_view name) const&& = delete;
  const LatencyStats* endpoint(std::string_view endpoint) const&& = delete;
};

}  // namespace redmux
