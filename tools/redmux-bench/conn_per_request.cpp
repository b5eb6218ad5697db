// conn-per-request vs shared (seed 000): N requests that each INCR a view counter, once with
// a new multiplexer per request (closed, then leaked), once through one shared multiplexer.
// New connections come from the server's INFO total_connections_received, read through the
// observer's already-open connection, so reading them opens none.
#include <memory>
#include <vector>

#include "bench.hpp"

namespace redmux_bench {

namespace {

enum class PerRequest { Close, Leak };

struct Counts {
  long long connections_before = 0;
  long long connections_after = 0;
  long long connected_clients = 0;
};

Row make_row(const Bench& bench, std::string variant, int requests, Clock::time_point start,
             Clock::time_point end, std::vector<std::int64_t>& latencies, const Counts& counts,
             const std::string& key) {
  Row row;
  row.scenario = "conn-per-request";
  row.variant = std::move(variant);
  row.client = "redmux";
  row.commands = requests;
  row.ms = ms_between(start, end);
  row.ops_per_sec = requests / (row.ms / 1000.0);
  row.set_latency(summarize(latencies));
  row.add("ms_per_request", row.ms / requests, 3);
  row.add("new_connections", counts.connections_after - counts.connections_before);
  row.add("connected_clients", counts.connected_clients);
  const long long value = bench.counter(key);
  row.ok = value == requests;
  row.check = "counter=" + std::to_string(value);
  return row;
}

Row per_request(Bench& bench, int requests, PerRequest mode) {
  const std::string variant = mode == PerRequest::Close ? "per-request" : "per-request-leaked";
  const std::string key = Bench::key("conn-per-request", variant);
  bench.del(key);
  const redmux::Config config = bench.config_named("per-request");
  std::vector<std::shared_ptr<redmux::Multiplexer>> leaked;
  std::vector<std::int64_t> latencies;
  latencies.reserve(requests);
  Counts counts;
  counts.connections_before = bench.info_integer("stats", "total_connections_received");
  const auto start = Clock::now();
  for (int i = 0; i < requests; ++i) {
    const auto t0 = Clock::now();
    auto mux = redmux::Multiplexer::connect(config);
    (void)mux->database().incr(key).get();
    if (mode == PerRequest::Close) {
      mux->close();
    } else {
      leaked.push_back(std::move(mux));  // nobody closes it: the connection stays open
    }
    latencies.push_back(ns_between(t0, Clock::now()));
  }
  const auto end = Clock::now();
  counts.connections_after = bench.info_integer("stats", "total_connections_received");
  counts.connected_clients = bench.info_integer("clients", "connected_clients");
  Row row = make_row(bench, variant, requests, start, end, latencies, counts, key);
  leaked.clear();  // close them now, outside the measurement
  return row;
}

Row shared(Bench& bench, int requests) {
  const std::string key = Bench::key("conn-per-request", "shared");
  bench.del(key);
  std::vector<std::int64_t> latencies;
  latencies.reserve(requests);
  Counts counts;
  counts.connections_before = bench.info_integer("stats", "total_connections_received");
  const auto start = Clock::now();
  // The one multiplexer is opened inside the measurement, as an application opens it once.
  auto mux = bench.connect("shared");
  redmux::Database db = mux->database();
  for (int i = 0; i < requests; ++i) {
    const auto t0 = Clock::now();
    (void)db.incr(key).get();
    latencies.push_back(ns_between(t0, Clock::now()));
  }
  const auto end = Clock::now();
  counts.connections_after = bench.info_integer("stats", "total_connections_received");
  counts.connected_clients = bench.info_integer("clients", "connected_clients");
  return make_row(bench, "shared", requests, start, end, latencies, counts, key);
}

}  // namespace

void run_conn_per_request(Bench& bench, int requests) {
  Table table;
  table.title = "conn-per-request vs shared: " + with_commas(requests) + " requests, one INCR each";
  table.shows =
      "a multiplexer per request pays a connection and handshake each time and leaks "
      "connections when not closed; one shared multiplexer uses one connection.";
  table.setup = bench.setup_line("1", with_commas(requests) + " × INCR");
  const long long clients_before = bench.info_integer("clients", "connected_clients");
  {
    Progress progress("conn-per-request: " + with_commas(requests) + " requests × 3 variants");
    table.rows.push_back(per_request(bench, requests, PerRequest::Close));
    table.rows.push_back(per_request(bench, requests, PerRequest::Leak));
    table.rows.push_back(shared(bench, requests));
  }
  table.reference = "per-request";
  table.notes.push_back(
      "connected_clients is read right after each variant (the shared one still open); before "
      "the scenario it was " +
      std::to_string(clients_before) + " (this tool's observer connection included).");
  table.notes.push_back(
      "per-request and shared times include connecting (the shared multiplexer connects once); "
      "latency is per request.");
  for (const Row& r : table.rows) bench.del(Bench::key("conn-per-request", r.variant));
  // Seed 000 (StackExchange.Redis, 200 requests; its multiplexer opens two connections).
  if (requests == 200) {
    for (Row& r : table.rows) {
      const bool leaked = r.variant == "per-request-leaked";
      const bool shared_row = r.variant == "shared";
      r.seed_ms = shared_row ? 44 : leaked ? 400 : 462;
      for (Field& f : r.extra) {
        if (f.name == "ms_per_request") f.with_seed(shared_row ? 0.22 : leaked ? 2.00 : 2.31, 2);
        if (f.name == "new_connections") f.with_seed(shared_row ? 2 : 400, 0);
        if (f.name == "connected_clients" && !shared_row) f.with_seed(leaked ? 402 : 2, 0);
      }
    }
    table.notes.push_back(
        "seed: seed 000, StackExchange.Redis 3.4 — two connections per multiplexer (commands "
        "and pub/sub), so 400 for 200 requests; redmux opens the subscription connection only "
        "on the first subscribe.");
  }
  bench.report().print(table);
}

}  // namespace redmux_bench
