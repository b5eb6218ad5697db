// rtt: seed 000's table — 10,000 INCRs awaited one by one took 2,144 ms
// there, issued together 7 ms — at a round trip like a network's. Loopback answers in tens
// of microseconds, which hides what pipelining is for; this kernel has no netem, so the
// commands go through a DelayRelay (delay_relay.hpp) that holds each direction's bytes for
// --delay-ms (0.1 ms: a round trip of at least 0.2 ms, the seed's). The rows are modes'
// four ways and its hiredis rows (modes_rows), through the relay; the idle round trip is
// measured first with PING, so the table says what one cost.
#include <algorithm>
#include <chrono>

#include "delay_relay.hpp"
#include "measure.hpp"

namespace redmux_bench {

void run_rtt(Bench& bench, long long n, double delay_ms) {
  const redmux::Endpoint& server = bench.config().endpoints.front();
  if (server.is_unix()) {
    std::fprintf(stderr, "redmux-bench: rtt needs a TCP server (the relay is TCP)\n");
    return;
  }
  const auto delay = std::chrono::nanoseconds(static_cast<long long>(delay_ms * 1e6));
  DelayRelay relay(server.host, server.port, delay);
  redmux::Config config = bench.config_named("redmux-bench-rtt");
  redmux::Endpoint through;
  through.host = "127.0.0.1";
  through.port = relay.port();
  config.endpoints = {through};
  if (bench.is_cluster()) {
    std::fprintf(stderr, "redmux-bench: rtt needs a standalone server\n");
    return;
  }

  // The round trip through the relay, idle: 200 PINGs awaited one by one.
  double rtt_us = 0;
  {
    auto mux = redmux::Multiplexer::connect(config);
    redmux::Database db = mux->database();
    std::vector<std::int64_t> samples;
    for (int i = 0; i < 200; ++i) {
      const auto t0 = Clock::now();
      (void)db.ping().get();
      samples.push_back(ns_between(t0, Clock::now()));
    }
    rtt_us = summarize(samples).p50_us;
  }

  Table table;
  table.title = "rtt: " + with_commas(n) + " INCRs four ways at a network's round trip";
  table.shows =
      "through a relay that delays each direction by " + fixed(delay_ms, 2) +
      " ms: awaiting each INCR pays the round trip every time; issuing first pays it about "
      "once.";
  table.setup =
      bench.setup_line("1", with_commas(n) + " × INCR of one key", "integer counters (INCR)") +
      " · relay 127.0.0.1:" + std::to_string(relay.port()) + " → " + server.to_string() + ", " +
      fixed(delay_ms, 2) + " ms each way, idle PING round trip p50 " + fixed(rtt_us, 0) + " µs · " +
      load_text();
  table.reference = "await-each";
  table.rows = modes_rows(bench, config, n, "rtt");
  for (Row& r : table.rows) {
    if (r.variant == "await-each") r.seed_ms = 2144;
    if (r.variant == "issue-then-await") r.seed_ms = 7;
    if (r.variant == "batch") r.seed_ms = 16;
    if (r.variant == "fire-and-forget") r.seed_ms = 4;
  }
  const double pipelining = modes_ratio(table.rows, "await-each", "issue-then-await", true);
  table.comparisons.push_back({"rtt",
                               "await-each time ÷ issue-then-await time (n=" + with_commas(n) + ")",
                               pipelining, "≥ 250", pipelining >= 250});
  const double sync = modes_ratio(table.rows, "await-each", "hiredis-sync", false);
  if (sync > 0) {
    table.comparisons.push_back(
        {"rtt", "await-each ops/s, redmux ÷ hiredis sync", sync, "≥ 0.95", sync >= 0.95});
  }
  const double append = modes_ratio(table.rows, "issue-then-await", "hiredis-append", true);
  if (append > 0) {
    table.comparisons.push_back(
        {"rtt", "issue-then-await time, redmux ÷ hiredis append", append, "≤ 1.2", append <= 1.2});
  }
  table.notes.push_back(
      "seed (ms): seed 000, StackExchange.Redis on .NET at ≈ 0.2 ms per round trip — "
      "sequential await, Task.WhenAll, IBatch, FireAndForget. The relay's connections: " +
      std::to_string(relay.connections()) + ".");
  bench.report().print(table);
}

}  // namespace redmux_bench
