#include "latency.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace redmux::cli {
namespace {

std::string ms(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", value);
  return buf;
}

// Milliseconds rounded to the microsecond, as a JSON number.
double ms_value(double value) {
  return std::round(value * 1000.0) / 1000.0;
}

}  // namespace

void LatencyStats::add(std::chrono::nanoseconds sample) {
  const double value = static_cast<double>(sample.count()) / 1e6;
  samples_ms_.push_back(value);
  sum_ms_ += value;
}

double LatencyStats::min_ms() const {
  return samples_ms_.empty() ? 0 : *std::min_element(samples_ms_.begin(), samples_ms_.end());
}
double LatencyStats::max_ms() const {
  return samples_ms_.empty() ? 0 : *std::max_element(samples_ms_.begin(), samples_ms_.end());
}
double LatencyStats::avg_ms() const {
  return samples_ms_.empty() ? 0 : sum_ms_ / static_cast<double>(samples_ms_.size());
}

double LatencyStats::percentile_ms(double p) const {
  if (samples_ms_.empty()) return 0;
  std::vector<double> sorted = samples_ms_;
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank: the smallest sample with at least p% of the samples at or below it.
  // (The epsilon keeps 99.9% of 1000 at rank 999 despite 99.9/100*1000 = 999.0000000000001.)
  auto rank =
      static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size()) - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

std::string LatencyStats::line(const std::vector<double>& percentiles) const {
  std::string out = "min: " + ms(min_ms()) + ", max: " + ms(max_ms()) + ", avg: " + ms(avg_ms()) +
                    " (" + std::to_string(count()) + " samples)";
  for (const double p : percentiles) {
    out += ", " + percentile_label(p) + ": " + ms(percentile_ms(p));
  }
  return out;
}

std::string LatencyStats::json(const std::vector<double>& percentiles) const {
  nlohmann::ordered_json out = {{"min", ms_value(min_ms())},
                                {"max", ms_value(max_ms())},
                                {"avg", ms_value(avg_ms())},
                                {"samples", count()}};
  for (const double p : percentiles) out[percentile_label(p)] = ms_value(percentile_ms(p));
  return out.dump();
}

std::string percentile_label(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%g", p);
  return buf;
}

}  // namespace redmux::cli
