#include "latency.hpp"

#include <algorithm>
#include <cmath>

namespace redmux_bench {

namespace {

// Nearest rank: the smallest sample with at least p% of the samples at or below it.
double rank_us(const std::vector<std::int64_t>& sorted, double percent) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(percent / 100.0 * n));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return static_cast<double>(sorted[rank - 1]) / 1000.0;
}

}  // namespace

LatencySummary summarize(std::vector<std::int64_t>& samples_ns) {
  LatencySummary summary;
  summary.samples = samples_ns.size();
  if (samples_ns.empty()) return summary;
  std::sort(samples_ns.begin(), samples_ns.end());
  summary.p50_us = rank_us(samples_ns, 50);
  summary.p99_us = rank_us(samples_ns, 99);
  return summary;
}

LatencySummary summarize(std::vector<std::vector<std::int64_t>>& per_thread_ns) {
  std::size_t total = 0;
  for (const auto& v : per_thread_ns) total += v.size();
  std::vector<std::int64_t> all;
  all.reserve(total);
  for (auto& v : per_thread_ns) {
    all.insert(all.end(), v.begin(), v.end());
    std::vector<std::int64_t>().swap(v);
  }
  return summarize(all);
}

}  // namespace redmux_bench
