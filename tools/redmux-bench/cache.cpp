// cache: T threads of GET for D seconds over 100 keys, on a
// multiplexer without the client-side cache, with it, and with it while a second client
// writes one of the keys as fast as it can (invalidations arriving all the time). rueidis
// publishes about 155 ns per cached GET (Go's b.RunParallel ns/op: wall time over every
// operation of every goroutine); ns_per_op here is the same quantity, 1e9 / ops/s.
#include <atomic>
#include <thread>

#include "bench.hpp"

namespace redmux_bench {
namespace {

constexpr int kKeys = 100;
constexpr double kRueidisNsPerOp = 155;

std::string read_key(int i) {
  return Bench::key("cache", "book:" + std::to_string(i));
}

}  // namespace

void run_cache(Bench& bench, int threads, double seconds) {
  Table table;
  table.title = "cache: " + std::to_string(threads) + " threads of GET, uncached vs clientCache";
  table.shows =
      "A cached GET is a lookup and a copy on the caller's thread: no round trip, no I/O "
      "thread; rueidis's published anchor is 155 ns/op.";
  table.setup =
      bench.setup_line(std::to_string(threads),
                       "GET of " + std::to_string(kKeys) + " keys for " + fixed(seconds, 1) + " s",
                       "64-byte values");
  auto plain = bench.connect("redmux-bench-cache-plain");
  redmux::Database writer_db = plain->database();
  const std::string value(64, 'v');
  for (int i = 0; i < kKeys; ++i) (void)writer_db.set(read_key(i), value).get();

  const struct {
    const char* variant;
    bool cache;
    bool writer;
  } variants[] = {
      {"uncached", false, false}, {"cached", true, false}, {"cached-with-writer", true, true}};
  double uncached_ops = 0;
  for (const auto& v : variants) {
    redmux::Config config = bench.config_named("redmux-bench-cache");
    config.client_cache = v.cache;
    auto mux = redmux::Multiplexer::connect(config);
    redmux::Database db = mux->database();
    for (int i = 0; i < kKeys; ++i) (void)db.get(read_key(i)).get();  // warm: every key cached
    std::atomic<bool> stop{false};
    std::atomic<long long> writes{0};
    std::thread writer;
    if (v.writer) {
      writer = std::thread([&] {
        for (long long n = 0; !stop.load(std::memory_order_relaxed); ++n) {
          (void)writer_db.set(read_key(0), std::to_string(n)).get();
          writes.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    const redmux::ClientCacheStatus before = mux->status().cache;
    const ProcessUsage usage_before = ProcessUsage::now();
    const LoopRun run = run_callers_loop(threads, seconds, std::string("cache: ") + v.variant,
                                         [&](int t) { (void)db.get(read_key(t % kKeys)).get(); });
    const ProcessUsage usage_after = ProcessUsage::now();
    const redmux::ClientCacheStatus after = mux->status().cache;
    stop.store(true);
    if (writer.joinable()) writer.join();
    Row row = Row::timed("cache", v.variant, "redmux", threads, run);
    add_usage(row, usage_before, usage_after, run.completed);
    const double ns_per_op = row.ops_per_sec > 0 ? 1e9 / row.ops_per_sec : 0;
    row.add("ns_per_op", ns_per_op, 0);
    const auto hits = static_cast<double>(after.hits - before.hits);
    const auto lookups = hits + static_cast<double>(after.misses - before.misses);
    row.add("hit_ratio", lookups > 0 ? hits / lookups : 0.0, 3);
    row.add("invalidations_per_s",
            static_cast<double>(after.invalidations - before.invalidations) / run.seconds, 0);
    row.add("cache_bytes", static_cast<long long>(after.bytes));
    row.add("cache_entries", static_cast<long long>(after.entries));
    if (v.writer) row.add("writes", writes.load());
    if (uncached_ops == 0) uncached_ops = row.ops_per_sec;
    row.add("x_uncached", row.ops_per_sec / uncached_ops, 2);
    if (v.cache) row.add("x_rueidis_155ns", kRueidisNsPerOp / ns_per_op, 2);
    row.ok = run.errors == 0 && (!v.cache || hits > 0);
    row.check = "errors " + std::to_string(run.errors);
    if (run.errors) row.check += ": " + run.first_error;
    table.rows.push_back(std::move(row));
  }
  for (int i = 0; i < kKeys; ++i) (void)writer_db.del(read_key(i)).get();
  table.notes.push_back(
      "ns_per_op = 1e9 / ops/s over all threads (Go's b.RunParallel ns/op, which rueidis's 155 "
      "ns is); cpu_us_per_op is this process's CPU (every thread, I/O threads included) per "
      "GET. cached-with-writer: a second client SETs one of the 100 keys in a loop, so its "
      "invalidations arrive while the threads read.");
  bench.report().print(table);
}

}  // namespace redmux_bench
