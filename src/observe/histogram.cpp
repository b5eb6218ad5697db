#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/ascii.hpp"
#include "observe/observer.hpp"
#include "redmux/histogram.hpp"

namespace redmux {

std::chrono::nanoseconds LatencyHistogram::percentile(double quantile) const noexcept {
  if (count_ == 0) return std::chrono::nanoseconds(0);
  quantile = std::clamp(quantile, 0.0, 1.0);
  // The rank of the wanted latency (1-based): the smallest that has `quantile` of them at
  // or below it.
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(quantile * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (std::size_t bucket = 0; bucket < kBuckets; ++bucket) {
    seen += buckets_[bucket];
    if (seen >= rank) {
      const std::uint64_t end =
          bucket + 1 < kBuckets ? bucket_floor(bucket + 1) - 1 : ~std::uint64_t{0};
      return std::chrono::nanoseconds(std::min(end, max_));
    }
  }
  return std::chrono::nanoseconds(max_);
}

void LatencyHistogram::record(std::chrono::nanoseconds latency) noexcept {
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, latency.count()));
  ++buckets_[bucket_of(ns)];
  ++count_;
  sum_ += ns;
  max_ = std::max(max_, ns);
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  for (std::size_t bucket = 0; bucket < kBuckets; ++bucket)
    buckets_[bucket] += other.buckets_[bucket];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

LatencyHistogram LatencyHistogram::since(const LatencyHistogram& earlier) const {
  LatencyHistogram out;
  for (std::size_t bucket = 0; bucket < kBuckets; ++bucket) {
    // A bucket below its earlier count is not this histogram's later snapshot: nothing.
    const std::uint64_t before = earlier.buckets_[bucket];
    if (buckets_[bucket] > before) out.add_bucket(bucket, buckets_[bucket] - before);
  }
  out.set_totals(sum_ > earlier.sum_ ? sum_ - earlier.sum_ : 0, max_);
  return out;
}

LatencySummary summarize(const LatencyHistogram& histogram) noexcept {
  LatencySummary summary;
  summary.count = histogram.count();
  summary.p50 = histogram.percentile(0.50);
  summary.p90 = histogram.percentile(0.90);
  summary.p99 = histogram.percentile(0.99);
  summary.p999 = histogram.percentile(0.999);
  summary.max = histogram.max();
  return summary;
}

namespace {

std::string duration_text(std::chrono::nanoseconds value) {
  char text[32];
  const double ns = static_cast<double>(value.count());
  if (ns < 1e3) {
    std::snprintf(text, sizeof text, "%.0fns", ns);
  } else if (ns < 1e6) {
    std::snprintf(text, sizeof text, ns < 1e4 ? "%.1fµs" : "%.0fµs", ns / 1e3);
  } else if (ns < 1e9) {
    std::snprintf(text, sizeof text, ns < 1e7 ? "%.2fms" : "%.1fms", ns / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.2fs", ns / 1e9);
  }
  return text;
}

}  // namespace

std::string to_string(const LatencySummary& summary) {
  return "n=" + std::to_string(summary.count) + " p50=" + duration_text(summary.p50) +
         " p90=" + duration_text(summary.p90) + " p99=" + duration_text(summary.p99) +
         " p99.9=" + duration_text(summary.p999) + " max=" + duration_text(summary.max);
}

const LatencyStats* Latencies::command(std::string_view name) const& noexcept {
  for (const LatencyStats& stats : by_command) {
    if (std::equal(
            name.begin(), name.end(), stats.name.begin(), stats.name.end(),
            [](char a, char b) { return detail::ascii::upper(a) == detail::ascii::upper(b); })) {
      return &stats;
    }
  }
  return nullptr;
}

const LatencyStats* Latencies::endpoint(std::string_view endpoint) const& noexcept {
  for (const LatencyStats& stats : by_endpoint) {
    if (stats.name == endpoint) return &stats;
  }
  return nullptr;
}

namespace detail {

void AtomicHistogram::copy_to(LatencyHistogram& out) const noexcept {
  for (std::size_t bucket = 0; bucket < LatencyHistogram::kBuckets; ++bucket) {
    const std::uint64_t count = buckets[bucket].load(std::memory_order_relaxed);
    if (count != 0) out.add_bucket(bucket, count);
  }
  out.set_totals(out.sum().count() + sum.load(std::memory_order_relaxed),
                 std::max<std::uint64_t>(out.max().count(), max.load(std::memory_order_relaxed)));
}

}  // namespace detail
}  // namespace redmux
