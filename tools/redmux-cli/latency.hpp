// Latency samples for the --latency modes and their lines in redis-cli's shapes:
//   min: 0.025, max: 0.661, avg: 0.155 (429 samples)
//   min: 0.076, max: 0.526, avg: 0.184 (91 samples) -- 1.00 seconds range
//   min: 0.029, max: 2.038, avg: 0.172 (424 samples), p50: 0.160, p99: 0.469, p99.9: 2.038
// Values are milliseconds with microsecond resolution (redis-cli 8's format). A plain value:
// one thread at a time.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace redmux::cli {

class LatencyStats {
 public:
  void add(std::chrono::nanoseconds sample);
  void clear() {
    samples_ms_.clear();
    sum_ms_ = 0;
  }

  std::size_t count() const noexcept { return samples_ms_.size(); }
  double min_ms() const;
  double max_ms() const;
  double avg_ms() const;
  /// Nearest-rank percentile (p in (0, 100]) in ms; 0 without samples.
  double percentile_ms(double p) const;

  /// "min: …, max: …, avg: … (N samples)" followed by ", p50: …" for each percentile.
  std::string line(const std::vector<double>& percentiles = {}) const;
  /// The same values as one JSON object: {"min":…,"max":…,"avg":…,"samples":N,"p50":…}.
  std::string json(const std::vector<double>& percentiles = {}) const;

 private:
  std::vector<double> samples_ms_;
  double sum_ms_ = 0;
};

/// "p50", "p99", "p99.9" for 50, 99, 99.9.
std::string percentile_label(double p);

}  // namespace redmux::cli
