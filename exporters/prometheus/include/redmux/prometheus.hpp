// PrometheusCollector: a multiplexer's counters, gauges and latency histograms as Prometheus
// metrics, through Debian's prometheus-cpp (the optional redmux::prometheus library, built
// when prometheus-cpp-dev is installed). Register it with a prometheus::Registry or an
// Exposer, or serve text_exposition() from an HTTP handler of your own:
//
//   auto collector = std::make_shared<redmux::PrometheusCollector>(mux);
//   registry.Register(...)  or  exposer.RegisterCollectable(collector);
//   // GET /metrics → redmux::text_exposition({collector})
//
// Each scrape reads status() and latencies() once (a copy: no lock on the I/O threads).
// Names follow Prometheus's conventions: redmux_ prefix, _total for counters, _seconds for
// durations (docs/observability.md lists them). Latency histograms need
// latencyHistograms=true; without it only the counters and gauges are exported.
//
// Threads: Collect() and the free functions may run on any thread, several at once. The
// collector holds the multiplexer weakly: once it is gone a scrape yields nothing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "redmux/histogram.hpp"
#include "redmux/multiplexer.hpp"

namespace redmux {

class PrometheusCollector : public ::prometheus::Collectable {
 public:
  /// `client` labels every metric client="…" when not empty (several multiplexers in one
  /// process); by default none is added.
  explicit PrometheusCollector(const std::shared_ptr<Multiplexer>& mux, std::string client = {});

  /// One snapshot of the multiplexer's status and histograms; empty once it is gone.
  std::vector<::prometheus::MetricFamily> Collect() const override;

 private:
  std::weak_ptr<Multiplexer> mux_;
  std::string client_;
};

/// The metric families of one status and one set of histograms (what Collect() builds;
/// for tests, or an exporter of one's own). `client`: as above.
std::vector<::prometheus::MetricFamily> prometheus_families(const MultiplexerStatus& status,
                                                            const Latencies& latencies,
                                                            const std::string& client = {});

/// The upper bounds (seconds) of the exported histograms' buckets: boundaries of redmux's
/// own buckets (so every count is exact), each the one at or just below 50 µs, 100 µs,
/// 250 µs … 10 s (within 12.5 % of the round value), then +Inf.
const std::vector<double>& prometheus_bucket_bounds();

/// Prometheus's text exposition format (what GET /metrics serves, Content-Type
/// "text/plain; version=0.0.4") of every family the collectables yield.
std::string text_exposition(
    const std::vector<std::shared_ptr<::prometheus::Collectable>>& collectables);

}  // namespace redmux
