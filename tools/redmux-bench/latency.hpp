// Per-operation latency samples and their percentiles. Every scenario records one sample per
// completed command (steady_clock, nanoseconds) in a vector owned by the recording thread;
// the vectors are merged and sorted once the run is over, so recording costs one clock read
// and one push_back per command and no synchronisation.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace redmux_bench {

using Clock = std::chrono::steady_clock;

/// Nanoseconds from `from` to `to`.
inline std::int64_t ns_between(Clock::time_point from, Clock::time_point to) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

/// Milliseconds from `from` to `to`, as a double.
inline double ms_between(Clock::time_point from, Clock::time_point to) noexcept {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

/// Nearest-rank percentiles of a set of samples, in microseconds; negative when there were
/// no samples (the scenario does not measure per-command latency).
struct LatencySummary {
  double p50_us = -1;
  double p99_us = -1;
  std::size_t samples = 0;
};

/// Sorts `samples_ns` in place and reads the percentiles.
LatencySummary summarize(std::vector<std::int64_t>& samples_ns);

/// Merges the per-thread vectors (emptying them), then summarizes.
LatencySummary summarize(std::vector<std::vector<std::int64_t>>& per_thread_ns);

}  // namespace redmux_bench
