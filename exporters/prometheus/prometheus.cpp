#include "redmux/prometheus.hpp"

#include <prometheus/metric_type.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

namespace redmux {
namespace {

constexpr ConnectionStatus::State kStates[] = {
    ConnectionStatus::State::Idle,         ConnectionStatus::State::Connecting,
    ConnectionStatus::State::Handshaking,  ConnectionStatus::State::Ready,
    ConnectionStatus::State::Reconnecting, ConnectionStatus::State::Closed};

using ::prometheus::ClientMetric;
using ::prometheus::MetricFamily;
using ::prometheus::MetricType;

/// The round bounds the exported buckets stand for, in nanoseconds.
constexpr std::array<std::uint64_t, 17> kRoundBounds = {
    50'000,      100'000,       250'000,       500'000,       1'000'000,     2'500'000,
    5'000'000,   10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000,
    500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};

/// For each round bound, redmux's bucket boundary at or below it (ns): a latency counts in
/// the exported bucket when its own bucket ends at or before the boundary — exactly.
const std::vector<std::uint64_t>& boundaries_ns() {
  static const std::vector<std::uint64_t> bounds = [] {
    std::vector<std::uint64_t> out;
    for (std::uint64_t round : kRoundBounds) {
      // The bucket holding `round` starts at or below it: that start is a boundary.
      out.push_back(LatencyHistogram::bucket_floor(LatencyHistogram::bucket_of(round)));
    }
    return out;
  }();
  return bounds;
}

ClientMetric::Histogram exported(const LatencyHistogram& histogram) {
  ClientMetric::Histogram out;
  out.sample_count = histogram.count();
  out.sample_sum = static_cast<double>(histogram.sum().count()) / 1e9;
  const std::vector<std::uint64_t>& counts = histogram.buckets();
  std::uint64_t cumulative = 0;
  std::size_t bucket = 0;
  for (std::uint64_t bound : boundaries_ns()) {
    // Buckets that end at or before `bound`: those whose floor is below it.
    for (; bucket < counts.size() && LatencyHistogram::bucket_floor(bucket) < bound; ++bucket) {
      cumulative += counts[bucket];
    }
    out.bucket.push_back({cumulative, static_cast<double>(bound) / 1e9});
  }
  out.bucket.push_back({histogram.count(), std::numeric_limits<double>::infinity()});
  return out;
}

class Families {
 public:
  explicit Families(const std::string& client) : client_(client) {}

  MetricFamily& family(const std::string& name, const std::string& help, MetricType type) {
    auto found = index_.find(name);
    if (found != index_.end()) return out_[found->second];
    index_.emplace(name, out_.size());
    out_.push_back(MetricFamily{name, help, type, {}});
    return out_.back();
  }
  ClientMetric& add(MetricFamily& family, std::vector<ClientMetric::Label> labels = {}) {
    if (!client_.empty()) labels.insert(labels.begin(), {"client", client_});
    ClientMetric metric;
    metric.label = std::move(labels);
    family.metric.push_back(std::move(metric));
    return family.metric.back();
  }
  void counter(const std::string& name, const std::string& help, double value) {
    add(family(name, help, MetricType::Counter)).counter.value = value;
  }
  void gauge(const std::string& name, const std::string& help, double value) {
    add(family(name, help, MetricType::Gauge)).gauge.value = value;
  }
  std::vector<MetricFamily> take() { return std::move(out_); }

 private:
  const std::string& client_;
  std::vector<MetricFamily> out_;
  std::map<std::string, std::size_t> index_;
};

double as_double(std::uint64_t value) {
  return static_cast<double>(value);
}

}  // namespace

PrometheusCollector::PrometheusCollector(const std::shared_ptr<Multiplexer>& mux,
                                         std::string client)
    : mux_(mux), client_(std::move(client)) {}

std::vector<MetricFamily> PrometheusCollector::Collect() const {
  const std::shared_ptr<Multiplexer> mux = mux_.lock();
  if (!mux) return {};
  return prometheus_families(mux->status(), mux->latencies(), client_);
}

const std::vector<double>& prometheus_bucket_bounds() {
  static const std::vector<double> bounds = [] {
    std::vector<double> out;
    for (std::uint64_t bound : boundaries_ns()) out.push_back(static_cast<double>(bound) / 1e9);
    out.push_back(std::numeric_limits<double>::infinity());
    return out;
  }();
  return bounds;
}

std::vector<MetricFamily> prometheus_families(const MultiplexerStatus& status,
                                              const Latencies& latencies,
                                              const std::string& client) {
  Families f(client);
  f.counter("redmux_commands_total", "Commands accepted", as_double(status.commands));
  f.counter("redmux_replies_total", "Replies read", as_double(status.replies));
  f.counter("redmux_writes_total", "Write calls to sockets", as_double(status.writes));
  f.counter("redmux_commands_written_total", "Commands the writes carried (redmux's own too)",
            as_double(status.commands_written));
  f.counter("redmux_bytes_written_total", "Bytes written to servers",
            as_double(status.bytes_written));
  f.counter("redmux_bytes_read_total", "Bytes read from servers", as_double(status.bytes_read));
  f.gauge("redmux_commands_per_write",
          "Commands per write since the start: automatic pipelining at work",
          status.commands_per_write());
  // Errors, one counter with a kind label (rate(redmux_errors_total[1m]) by kind).
  MetricFamily& errors =
      f.family("redmux_errors_total", "Commands and connections that went wrong, by kind",
               MetricType::Counter);
  const std::pair<const char*, std::uint64_t> kinds[] = {
      {"timeout", status.timeouts},
      {"queue_full", status.queue_full},
      {"connection_failure", status.connection_failures},
      {"dead_connection", status.dead_connections},
      {"fire_and_forget", status.fire_and_forget_errors},
      {"hook", status.hook_errors},
  };
  for (const auto& [kind, count] : kinds)
    f.add(errors, {{"kind", kind}}).counter.value = as_double(count);
  f.counter("redmux_reconnects_total", "Reconnections", as_double(status.reconnects));
  f.counter("redmux_resent_total", "Commands resent after a connection broke",
            as_double(status.resent));
  f.counter("redmux_redirects_total", "Redis Cluster MOVED / ASK replies followed",
            as_double(status.redirects));
  f.counter("redmux_slow_commands_total", "Commands over slowCommandThreshold",
            as_double(status.slow_commands));
  f.counter("redmux_slow_hooks_total", "Hook calls longer than 1 ms", as_double(status.slow_hooks));
  f.gauge("redmux_outstanding_commands", "Accepted commands not completed yet",
          as_double(status.outstanding));
  f.gauge("redmux_queued_commands", "Accepted commands waiting to be written",
          as_double(status.queued));
  f.gauge("redmux_in_flight_commands", "Commands written, awaiting their replies",
          as_double(status.in_flight));

  // Connections by purpose and state: every state of each purpose present, 0 where no
  // connection is in it, so that a series (state="reconnecting") does not vanish once
  // recovered and an alert on it sees 0 rather than no data.
  std::map<std::pair<std::string, std::string>, std::size_t> by_kind;
  for (const ConnectionStatus& connection : status.per_connection) {
    const std::string purpose(to_string(connection.purpose));
    for (const ConnectionStatus::State state : kStates) {
      by_kind.try_emplace({purpose, std::string(to_string(state))}, 0);
    }
    ++by_kind[{purpose, std::string(to_string(connection.state))}];
  }
  MetricFamily& connections =
      f.family("redmux_connections", "Connections, by purpose and state", MetricType::Gauge);
  for (const auto& [key, count] : by_kind) {
    f.add(connections, {{"purpose", key.first}, {"state", key.second}}).gauge.value =
        as_double(count);
  }
  MetricFamily& per_write = f.family("redmux_connection_commands_per_write",
                                     "Commands per write of each connection", MetricType::Gauge);
  MetricFamily& per_queued =
      f.family("redmux_connection_queued_commands",
               "Commands waiting to be written on each connection", MetricType::Gauge);
  MetricFamily& per_in_flight =
      f.family("redmux_connection_in_flight_commands", "Commands in flight on each connection",
               MetricType::Gauge);
  // Several connections may share an endpoint and purpose (connectionsPerEndpoint): summed.
  struct PerConnection {
    std::uint64_t writes = 0, commands = 0;
    std::size_t queued = 0, in_flight = 0;
  };
  std::map<std::pair<std::string, std::string>, PerConnection> per;
  for (const ConnectionStatus& connection : status.per_connection) {
    PerConnection& p = per[{connection.endpoint, std::string(to_string(connection.purpose))}];
    p.writes += connection.writes;
    p.commands += connection.commands_written;
    p.queued += connection.queued;
    p.in_flight += connection.in_flight;
  }
  for (const auto& [key, p] : per) {
    const std::vector<ClientMetric::Label> labels = {{"endpoint", key.first},
                                                     {"purpose", key.second}};
    f.add(per_write, labels).gauge.value =
        p.writes ? as_double(p.commands) / as_double(p.writes) : 0.0;
    f.add(per_queued, labels).gauge.value = as_double(p.queued);
    f.add(per_in_flight, labels).gauge.value = as_double(p.in_flight);
  }

  if (!latencies.by_command.empty() || !latencies.by_endpoint.empty()) {
    MetricFamily& reply = f.family(
        "redmux_command_duration_seconds",
        "Time from a command's call to its reply read, by command (latencyHistograms=true)",
        MetricType::Histogram);
    MetricFamily& delivered =
        f.family("redmux_command_delivery_duration_seconds",
                 "Time from a command's call until its future held the value, by command",
                 MetricType::Histogram);
    for (const LatencyStats& stats : latencies.by_command) {
      f.add(reply, {{"command", stats.name}}).histogram = exported(stats.to_reply);
      f.add(delivered, {{"command", stats.name}}).histogram = exported(stats.to_delivery);
    }
    MetricFamily& endpoint = f.family("redmux_endpoint_duration_seconds",
                                      "Time from a command's call to its reply read, by endpoint",
                                      MetricType::Histogram);
    for (const LatencyStats& stats : latencies.by_endpoint) {
      f.add(endpoint, {{"endpoint", stats.name}}).histogram = exported(stats.to_reply);
    }
  }
  return f.take();
}

std::string text_exposition(
    const std::vector<std::shared_ptr<::prometheus::Collectable>>& collectables) {
  std::vector<MetricFamily> families;
  for (const std::shared_ptr<::prometheus::Collectable>& collectable : collectables) {
    if (!collectable) continue;
    std::vector<MetricFamily> more = collectable->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  return ::prometheus::TextSerializer().Serialize(families);
}

}  // namespace redmux
