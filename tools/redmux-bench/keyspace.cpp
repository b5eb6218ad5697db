// keyspace (seed 000, "Key Design and SCAN Instead of KEYS"): N counters named
// bookstore:book:{id}:views, then two experiments on them —
//   keys-scan   while one multiplexer lists every key, another PINGs every 5 ms: KEYS (one
//               command, admin mode) vs SCAN pages of 1,000 through Database::keys(); the
//               walk's time, the PINGs issued during it (p50/p99/max) and INFO commandstats'
//               calls and µs per call for KEYS / SCAN;
//   key-names   used_memory and MEMORY USAGE of one key with the long names, then again with
//               b:{id}:v after FLUSHDB.
// Runs only on an empty database (it writes N keys and ends with FLUSHDB), and needs the
// admin commands (KEYS, CONFIG RESETSTAT, FLUSHDB) on a multiplexer of its own.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "bench.hpp"

namespace redmux_bench {

namespace {

using namespace std::chrono_literals;

constexpr int kWindow = 5000;  // INCRs in flight while filling

std::string long_name(long long id) {
  return "bookstore:book:" + std::to_string(id) + ":views";
}
std::string short_name(long long id) {
  return "b:" + std::to_string(id) + ":v";
}

// INCR of every key once (each counter then holds 1), in windows of kWindow.
void fill(redmux::Database db, long long keys, std::string (*name)(long long)) {
  Progress progress("keyspace: INCR of " + with_commas(keys) + " keys like " + name(42));
  std::vector<redmux::Future<long long>> window;
  window.reserve(kWindow);
  for (long long id = 0; id < keys;) {
    window.clear();
    for (int i = 0; i < kWindow && id < keys; ++i, ++id) window.push_back(db.incr(name(id)));
    for (auto& f : window) f.get();
  }
}

// PINGs from their own multiplexer every 5 ms until stopped; each sample is kept with the
// time it was issued, so the walk's window can be cut out afterwards.
class Pinger {
 public:
  explicit Pinger(const Bench& bench) : mux_(bench.connect("redmux-bench-pinger")) {
    thread_ = std::thread([this] {
      redmux::Database db = mux_->database();
      while (!stop_.load()) {
        const auto t0 = Clock::now();
        db.ping().get();
        const auto t1 = Clock::now();
        {
          std::lock_guard lock(mutex_);
          samples_.push_back({t0, ns_between(t0, t1)});
        }
        count_.fetch_add(1);
        std::this_thread::sleep_for(5ms);
      }
    });
  }
  ~Pinger() {
    stop_ = true;
    thread_.join();
  }
  Pinger(const Pinger&) = delete;
  Pinger& operator=(const Pinger&) = delete;

  long long count() const { return count_.load(); }
  /// Waits until `more` PINGs beyond the count now have completed.
  void await_pings(long long more) const {
    const long long target = count() + more;
    while (count() < target) std::this_thread::sleep_for(1ms);
  }
  /// The latencies of the PINGs issued in [from, to].
  std::vector<std::int64_t> issued_between(Clock::time_point from, Clock::time_point to) {
    std::lock_guard lock(mutex_);
    std::vector<std::int64_t> out;
    for (const auto& [issued, ns] : samples_) {
      if (issued >= from && issued <= to) out.push_back(ns);
    }
    return out;
  }

 private:
  std::shared_ptr<redmux::Multiplexer> mux_;
  std::atomic<bool> stop_{false};
  std::atomic<long long> count_{0};
  std::mutex mutex_;
  std::vector<std::pair<Clock::time_point, std::int64_t>> samples_;
  std::thread thread_;
};

double ms_of(std::int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

// One way of listing the keys, timed, with the PINGs issued meanwhile.
template <class Walk>
Row walk_row(Bench& bench, const std::string& variant, const std::string& command, long long keys,
             Walk walk) {
  Pinger pinger(bench);
  pinger.await_pings(3);  // the pinger runs before the walk starts
  (void)bench.admin().execute({"CONFIG", "RESETSTAT"}).get();
  long long found = 0;
  Clock::time_point start, end;
  {
    Progress progress("keys-scan: " + variant + " over " + with_commas(keys) + " keys");
    start = Clock::now();
    found = walk();
    end = Clock::now();
  }
  pinger.await_pings(3);  // the PINGs held up behind the walk have answered
  const std::vector<std::int64_t> pings = pinger.issued_between(start, end);
  const CommandStat stat = command_stat(bench.admin().info("commandstats").get(), command);
  Row row;
  row.scenario = "keys-scan";
  row.variant = variant;
  row.client = "redmux";
  row.threads = 0;
  row.add("keys", found);
  row.add("walk_ms", ms_between(start, end), 1);
  std::vector<std::int64_t> sorted = pings;
  const LatencySummary summary = summarize(sorted);  // sorts`sorted`
  row.add("pings", static_cast<long long>(pings.size()));
  row.add("ping_p50_ms", summary.p50_us / 1000.0, 2);
  row.add("ping_p99_ms", summary.p99_us / 1000.0, 2);
  row.add("ping_max_ms", sorted.empty() ? 0.0 : ms_of(sorted.back()), 2);
  row.add(command + "_calls", stat.calls);
  row.add("usec_per_call", stat.usec_per_call, 1);
  row.ok = found == keys && !pings.empty();
  row.check = "found " + with_commas(found) + " of " + with_commas(keys) + " keys";
  return row;
}

void keys_scan(Bench& bench, long long keys) {
  Table table;
  table.title = "keys-scan: listing " + with_commas(keys) + " keys while another client PINGs";
  table.shows =
      "KEYS is one long command: every other client waits behind it; SCAN pages of 1,000 let "
      "the PINGs in between — longer in total, short stalls.";
  table.setup =
      bench.setup_line("1 lister + 1 PING client (every 5 ms), two multiplexers",
                       with_commas(keys) +
                           " keys bookstore:book:{id}:views; KEYS bookstore:book:* (admin) vs "
                           "db.keys(\"bookstore:book:*\", 1000) (SCAN COUNT 1000)",
                       "counters (1)");
  const std::string pattern = "bookstore:book:*";
  Row keys_row = walk_row(bench, "keys", "keys", keys, [&] {
    return static_cast<long long>(bench.admin().execute({"KEYS", pattern}).get().size());
  });
  Row scan_row = walk_row(bench, "scan", "scan", keys, [&] {
    auto mux = bench.connect("redmux-bench-scan");
    long long n = 0;
    for (const std::string& key : mux->database().keys(pattern, 1000)) {
      (void)key;
      ++n;
    }
    return n;
  });
  // The seed's figures (1,000,000 keys, StackExchange.Redis): KEYS held a PING 102 ms; SCAN
  // took 1,031 ms, PINGs median 0.36 / p99 6.40 / max 6.40 ms, 2,000 SCAN calls at 308 µs.
  for (Field& f : keys_row.extra) {
    if (f.name == "ping_max_ms") f.with_seed(102, 0);
  }
  for (Field& f : scan_row.extra) {
    if (f.name == "walk_ms") f.with_seed(1031, 0);
    if (f.name == "ping_p50_ms") f.with_seed(0.36, 2);
    if (f.name == "ping_p99_ms") f.with_seed(6.40, 2);
    if (f.name == "ping_max_ms") f.with_seed(6.40, 2);
    if (f.name == "scan_calls") f.with_seed(2000, 0);
    if (f.name == "usec_per_call") f.with_seed(308.05, 1);
  }
  table.rows = {std::move(keys_row), std::move(scan_row)};
  table.notes.push_back(
      "seed figures (in parentheses): seed 000, 1,000,000 keys, StackExchange.Redis against "
      "Redis 8; the KEYS row's other seed figures were not published.");
  table.notes.push_back(
      "pings: the PINGs issued while the walk ran (their latency includes waiting behind it); "
      "calls and usec_per_call: INFO commandstats after CONFIG RESETSTAT.");
  bench.report().print(table);
}

Row names_row(Bench& bench, const std::string& variant, long long keys,
              std::string (*name)(long long)) {
  (void)bench.admin().execute({"FLUSHDB", "SYNC"}).get();
  const long long empty = bench.info_integer("memory", "used_memory");
  fill(bench.observer(), keys, name);
  const long long used = bench.info_integer("memory", "used_memory");
  const redmux::Reply usage = bench.admin().execute({"MEMORY", "USAGE", name(42)}).get();
  const long long dbsize = bench.observer().dbsize().get();
  Row row;
  row.scenario = "key-names";
  row.variant = variant;
  row.client = "redmux";
  row.threads = 0;
  row.add("keys", dbsize);
  row.add("used_memory_mib", mib(used), 1);
  row.add("bytes_per_key", static_cast<double>(used - empty) / static_cast<double>(keys), 1);
  long long usage_bytes = 0;
  if (usage.type() == redmux::ReplyType::Integer)
    usage_bytes = std::stoll(std::string(usage.text()));
  row.add("memory_usage_bytes", usage_bytes);
  row.ok = dbsize == keys;
  row.check =
      "DBSIZE=" + with_commas(dbsize) + ", used_memory empty " + fixed(mib(empty), 1) + " MiB";
  return row;
}

void key_names(Bench& bench, long long keys) {
  Table table;
  table.title = "key-names: " + with_commas(keys) + " counters, long names vs short";
  table.shows =
      "readable key names cost memory, less than one might fear: per key, about the 17 "
      "characters bookstore:book:{id}:views has more than b:{id}:v.";
  table.setup =
      bench.setup_line("1", "INCR of " + with_commas(keys) + " keys, once each", "counters (1)");
  Row long_row = names_row(bench, "bookstore:book:{id}:views", keys, long_name);
  Row short_row = names_row(bench, "b:{id}:v", keys, short_name);
  (void)bench.admin().execute({"FLUSHDB", "SYNC"}).get();
  for (Field& f : long_row.extra) {
    if (f.name == "used_memory_mib") f.with_seed(59.2, 1);
    if (f.name == "memory_usage_bytes") f.with_seed(42, 0);
  }
  for (Field& f : short_row.extra) {
    if (f.name == "used_memory_mib") f.with_seed(43.9, 1);
    if (f.name == "memory_usage_bytes") f.with_seed(25, 0);
  }
  table.rows = {std::move(long_row), std::move(short_row)};
  table.notes.push_back(
      "seed figures: seed 000, 1,000,000 keys on Redis 8 (used_memory_human, in MiB); "
      "used_memory includes the server's own ≈ 1 MiB, so compare bytes_per_key (used_memory "
      "over the empty database's, per key) at other sizes.");
  table.notes.push_back("MEMORY USAGE of " + long_name(42) + " and " + short_name(42) +
                        ": the key's own allocation, without the keyspace's per-key overhead.");
  bench.report().print(table);
}

}  // namespace

void run_keyspace(Bench& bench, long long keys) {
  if (!bench.database_empty()) {
    Table table;
    table.title = "keys-scan and key-names: skipped";
    table.shows = "these experiments write " + with_commas(keys) +
                  " keys and end with FLUSHDB, so they run only on an empty database.";
    table.setup = bench.setup_line("—", "—");
    table.notes.push_back(
        "the database under test has keys: run against a throwaway server (scripts/demo "
        "starts one) or an empty database (defaultDatabase=…).");
    bench.report().print(table);
    return;
  }
  fill(bench.observer(), keys, long_name);
  keys_scan(bench, keys);
  key_names(bench, keys);
}

}  // namespace redmux_bench
