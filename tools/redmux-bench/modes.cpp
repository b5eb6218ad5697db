// modes (seed 000): N INCRs of one counter sent four ways through one multiplexer —
// awaiting each, issuing all then awaiting them, a Batch, FireAndForget followed by a GET —
// next to hiredis doing the same with redisCommand (one round trip each) and with
// redisAppendCommand × N then redisGetReply × N (its own pipeline).
//
// Every variant starts on a deleted key and checks what it got: each INCR reply must be its
// position (1, 2, 3 …: one caller, in order) and the server's counter must read N after.
// Latency: for the awaited variants, reply time − issue time per command; for the issued-
// then-awaited ones the reply time is when get() returned for that command, the futures
// being read in issue order (replies also arrive in that order, so this is the completion
// time to within the cost of get()). FireAndForget awaits nothing: no latency.
#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "bench.hpp"
#include "hiredis_client.hpp"
#include "measure.hpp"

namespace redmux_bench {

namespace {

struct Measurement {
  Clock::time_point start, end;
  std::vector<std::int64_t> latencies;
  long long out_of_order = 0;  ///< replies that were not their position
  long long refused = 0;       ///< commands refused at once (queue full …)
  std::string extra_check;
};

Row to_row(Bench& bench, const std::string& scenario, std::string variant, std::string client,
           long long n, Measurement& m, const std::string& key) {
  Row row;
  row.scenario = scenario;
  row.variant = std::move(variant);
  row.client = std::move(client);
  row.baseline = row.client != "redmux";
  row.commands = n;
  row.ms = ms_between(m.start, m.end);
  row.ops_per_sec = static_cast<double>(n) / (row.ms / 1000.0);
  row.set_latency(summarize(m.latencies));
  const long long value = bench.counter(key);
  row.ok = value == n && m.out_of_order == 0 && m.refused == 0;
  row.check = "counter=" + std::to_string(value);
  if (m.out_of_order) row.check += " out-of-order=" + std::to_string(m.out_of_order);
  if (m.refused) row.check += " refused=" + std::to_string(m.refused);
  row.check += m.extra_check;
  return row;
}

void add_pipelining(Row& row, const redmux::MultiplexerStatus& before,
                    const redmux::MultiplexerStatus& after) {
  const auto writes = after.writes - before.writes;
  const auto commands = after.commands - before.commands;
  if (writes) row.add("cmds_per_write", static_cast<double>(commands) / writes, 1);
}

Measurement await_each(redmux::Database db, const std::string& key, long long n) {
  Measurement m;
  m.latencies.reserve(n);
  m.start = Clock::now();
  for (long long i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    const long long value = db.incr(key).get();
    m.latencies.push_back(ns_between(t0, Clock::now()));
    m.out_of_order += value != i + 1;
  }
  m.end = Clock::now();
  return m;
}

// Issue every command through `sink` (a Database or a Batch), run `after_issue`, then
// await them in order.
template <class Sink, class AfterIssue>
Measurement issue_then_await(Sink& sink, const std::string& key, long long n,
                             AfterIssue after_issue) {
  Measurement m;
  std::vector<redmux::Future<long long>> futures;
  std::vector<Clock::time_point> issued(n);
  futures.reserve(n);
  m.latencies.reserve(n);
  m.start = Clock::now();
  for (long long i = 0; i < n; ++i) {
    issued[i] = Clock::now();
    futures.push_back(sink.incr(key));
  }
  after_issue();
  for (long long i = 0; i < n; ++i) {
    redmux::Result<long long> r = futures[i].result();
    m.latencies.push_back(ns_between(issued[i], Clock::now()));
    if (!r) {
      ++m.refused;
    } else {
      m.out_of_order += *r != i + 1;
    }
  }
  m.end = Clock::now();
  return m;
}

Measurement fire_and_forget(redmux::Database db, const std::string& key, long long n) {
  Measurement m;
  m.start = Clock::now();
  for (long long i = 0; i < n; ++i) {
    // Complete at once; a refused command (queue full) is complete with its error.
    m.refused += !db.incr(key, redmux::Flags::FireAndForget).result().has_value();
  }
  // A normal command after them: replies come in order, so it reads every INCR's effect.
  const std::optional<std::string> value = db.get(key).get();
  m.end = Clock::now();
  m.extra_check = " GET read " + value.value_or("nil");
  m.out_of_order = value != std::to_string(n);
  return m;
}

Measurement hiredis_sync(HiredisConnection& c, const std::string& key, long long n) {
  Measurement m;
  m.latencies.reserve(n);
  m.start = Clock::now();
  for (long long i = 0; i < n; ++i) {
    const auto t0 = Clock::now();
    const long long value = c.incr(key);
    m.latencies.push_back(ns_between(t0, Clock::now()));
    m.out_of_order += value != i + 1;
  }
  m.end = Clock::now();
  return m;
}

Measurement hiredis_append(HiredisConnection& c, const std::string& key, long long n) {
  Measurement m;
  std::vector<Clock::time_point> issued(n);
  m.latencies.reserve(n);
  m.start = Clock::now();
  for (long long i = 0; i < n; ++i) {
    issued[i] = Clock::now();
    c.append_incr(key);
  }
  for (long long i = 0; i < n; ++i) {
    const long long value = c.read_integer();
    m.latencies.push_back(ns_between(issued[i], Clock::now()));
    m.out_of_order += value != i + 1;
  }
  m.end = Clock::now();
  return m;
}

double ratio_of_p50(const Table& table, const std::string& a, const std::string& b) {
  const Row *ra = nullptr, *rb = nullptr;
  for (const Row& r : table.rows) {
    if (r.variant == a) ra = &r;
    if (r.variant == b) rb = &r;
  }
  if (!ra || !rb || rb->p50_us <= 0) return -1;
  return ra->p50_us / rb->p50_us;
}

}  // namespace

std::vector<Row> modes_rows(Bench& bench, const redmux::Config& config, long long n,
                            const std::string& scenario) {
  const bool baselines = !bench.options().no_baselines && bench.hiredis_usable();
  const int repeat = std::max(1, bench.options().repeat);
  auto progress = std::make_unique<Progress>(
      scenario + ": " + with_commas(n) + " INCRs, " + (baselines ? "6" : "4") + " variants" +
      (repeat > 1 ? " × " + std::to_string(repeat) + " runs" : ""));
  auto mux = redmux::Multiplexer::connect(config);
  redmux::Database db = mux->database();
  RowRuns runs;
  auto run_redmux = [&](const std::string& variant, auto&& body) {
    const std::string key = Bench::key(scenario, variant);
    bench.del(key);
    const auto before = mux->status();
    const redmux::LatencyHistogram histogram_before = delivered_histogram(*mux, "INCR");
    const ProcessUsage usage_before = ProcessUsage::now();
    Measurement m = body(key);
    const ProcessUsage usage_after = ProcessUsage::now();
    const auto after = mux->status();
    Row row = to_row(bench, scenario, variant, "redmux", n, m, key);
    add_histogram_latency(row, histogram_before, delivered_histogram(*mux, "INCR"));
    add_pipelining(row, before, after);
    add_usage(row, usage_before, usage_after, n);
    runs.add(std::move(row));
  };
  // Runs interleave variants (a, b, c, a, b, c …) so drift in machine load hits all alike.
  for (int r = 0; r < repeat; ++r) {
    run_redmux("await-each", [&](const std::string& key) { return await_each(db, key, n); });
    run_redmux("issue-then-await",
               [&](const std::string& key) { return issue_then_await(db, key, n, [] {}); });
    run_redmux("batch", [&](const std::string& key) {
      redmux::Batch batch = db.batch();
      return issue_then_await(batch, key, n, [&] { batch.execute(); });
    });
    run_redmux("fire-and-forget",
               [&](const std::string& key) { return fire_and_forget(db, key, n); });
    if (baselines) {
      HiredisConnection hiredis(config);
      for (const char* variant : {"hiredis-sync", "hiredis-append"}) {
        const std::string key = Bench::key(scenario, variant);
        bench.del(key);
        const ProcessUsage usage_before = ProcessUsage::now();
        Measurement m = std::string(variant) == "hiredis-sync" ? hiredis_sync(hiredis, key, n)
                                                               : hiredis_append(hiredis, key, n);
        const ProcessUsage usage_after = ProcessUsage::now();
        Row row = to_row(bench, scenario, variant, "hiredis", n, m, key);
        add_usage(row, usage_before, usage_after, n);
        runs.add(std::move(row));
      }
    }
  }
  std::vector<Row> rows = runs.medians();
  for (const Row& r : rows) bench.del(Bench::key(scenario, r.variant));
  return rows;
}

double modes_ratio(const std::vector<Row>& rows, const std::string& a, const std::string& b,
                   bool by_time) {
  const Row *ra = nullptr, *rb = nullptr;
  for (const Row& r : rows) {
    if (r.variant == a) ra = &r;
    if (r.variant == b) rb = &r;
  }
  if (!ra || !rb) return -1;
  return by_time ? ra->ms / rb->ms : ra->ops_per_sec / rb->ops_per_sec;
}

namespace {

void run_size(Bench& bench, long long n) {
  const bool baselines = !bench.options().no_baselines && bench.hiredis_usable();
  Table table;
  table.title = "modes: " + with_commas(n) + " INCRs four ways";
  table.shows =
      "awaiting each INCR pays a round trip per command; issuing first lets the multiplexer "
      "pipeline them (hiredis rows: the same by hand).";
  table.setup = bench.setup_line("1", with_commas(n) + " × INCR of one key");
  table.reference = "await-each";
  table.rows = modes_rows(bench, bench.config_named("redmux-bench-modes"), n, "modes");
  if (baselines) {
    const double sync = modes_ratio(table.rows, "await-each", "hiredis-sync", false);
    table.comparisons.push_back(
        {"modes", "await-each ops/s, redmux ÷ hiredis sync (n=" + with_commas(n) + ")", sync,
         "≥ 0.95", sync >= 0.95});
    const double by_median = ratio_of_p50(table, "hiredis-sync", "await-each");
    table.comparisons.push_back({"modes",
                                 "await-each by median latency, hiredis p50 ÷ redmux p50 (n=" +
                                     with_commas(n) + "; robust to preemption)",
                                 by_median, "≥ 0.95", by_median >= 0.95});
    const double append = modes_ratio(table.rows, "issue-then-await", "hiredis-append", true);
    table.comparisons.push_back(
        {"modes", "issue-then-await time, redmux ÷ hiredis append (n=" + with_commas(n) + ")",
         append, "≤ 1.2", append <= 1.2});
  }
  table.notes.push_back(
      "fire-and-forget's time includes the GET that reads the counter back; batch's includes "
      "execute(). Latency of issued-then-awaited rows: get() return − issue, in issue order.");
  // Seed 000 (StackExchange.Redis, 10,000 INCRs): sequential await 2,144 ms, Task.WhenAll
  // 7 ms, IBatch 16 ms, FireAndForget 4 ms.
  if (n == 10000) {
    for (Row& r : table.rows) {
      if (r.variant == "await-each") r.seed_ms = 2144;
      if (r.variant == "issue-then-await") r.seed_ms = 7;
      if (r.variant == "batch") r.seed_ms = 16;
      if (r.variant == "fire-and-forget") r.seed_ms = 4;
    }
    table.notes.push_back(
        "seed (ms): seed 000, StackExchange.Redis 3.4 on .NET 10 — sequential await, "
        "Task.WhenAll, IBatch, FireAndForget.");
  }
  bench.report().print(table);
}

}  // namespace

void run_modes(Bench& bench, const std::vector<long long>& sizes) {
  for (long long n : sizes) run_size(bench, n);
}

}  // namespace redmux_bench
