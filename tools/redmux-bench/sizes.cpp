// sizes: SET and GET of values of 16 B, 1 KiB, 64 KiB and 1 MiB (--sizes),
// redmux next to hiredis, one caller each. The caller keeps a window of commands in flight
// (W = 4 MiB ÷ size, between 1 and 100, the same for both clients: a pipelined caller, so
// the client's own cost per byte shows rather than the round trip) for --seconds per row.
// MB/s counts value bytes only (10^6 bytes a second); cpu_ns_per_byte is this process's CPU
// (user + system, every thread) per value byte. Every GET must return the whole value: its
// size always, its bytes compared in the first window.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "hiredis_client.hpp"
#include "measure.hpp"

namespace redmux_bench {
namespace {

struct SizeRun {
  Clock::time_point start, end;
  long long commands = 0;
  long long bad = 0;  ///< GETs whose value was not the one SET, or a SET not OK
  std::string first_error;
};

std::string value_of(long long size) {
  std::string value(static_cast<std::size_t>(size), '\0');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>('a' + i % 26);
  return value;
}

int window_for(long long size) {
  return static_cast<int>(std::clamp<long long>((4LL << 20) / size, 1, 100));
}

template <class Window>
SizeRun timed(double seconds, Window window) {
  SizeRun run;
  run.start = Clock::now();
  const auto deadline = run.start + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
  for (bool first = true; Clock::now() < deadline; first = false) window(run, first);
  run.end = Clock::now();
  return run;
}

SizeRun redmux_run(redmux::Database& db, const std::string& key, const std::string& value, bool get,
                   int w, double seconds) {
  return timed(seconds, [&](SizeRun& run, bool first) {
    if (get) {
      std::vector<redmux::Future<std::optional<std::string>>> futures;
      futures.reserve(w);
      for (int i = 0; i < w; ++i) futures.push_back(db.get(key));
      for (auto& f : futures) {
        const std::optional<std::string> got = f.get();
        const bool good = got && got->size() == value.size() && (!first || *got == value);
        run.bad += !good;
        ++run.commands;
      }
    } else {
      std::vector<redmux::Future<bool>> futures;
      futures.reserve(w);
      for (int i = 0; i < w; ++i) futures.push_back(db.set(key, value));
      for (auto& f : futures) {
        run.bad += !f.get();
        ++run.commands;
      }
    }
  });
}

SizeRun hiredis_run(HiredisConnection& c, const std::string& key, const std::string& value,
                    bool get, int w, double seconds) {
  return timed(seconds, [&](SizeRun& run, bool) {
    for (int i = 0; i < w; ++i) get ? c.append_get(key) : c.append_set(key, value);
    for (int i = 0; i < w; ++i) {
      const long long length = c.read_string_length();
      run.bad += get ? length != static_cast<long long>(value.size()) : length != 0;
      ++run.commands;
    }
  });
}

Row to_row(const std::string& variant, const std::string& client, long long size, int w,
           const SizeRun& run, const ProcessUsage& before, const ProcessUsage& after) {
  Row row;
  row.scenario = "sizes";
  row.variant = variant;
  row.client = client;
  row.baseline = client != "redmux";
  row.commands = run.commands;
  row.ms = ms_between(run.start, run.end);
  row.ops_per_sec = static_cast<double>(run.commands) / (row.ms / 1000.0);
  const double bytes = static_cast<double>(run.commands) * static_cast<double>(size);
  row.add("value_bytes", size);
  row.add("window", static_cast<long long>(w));
  row.add("mb_per_s", bytes / (row.ms / 1000.0) / 1e6, 1);
  add_usage(row, before, after, run.commands);
  row.add("cpu_ns_per_byte", (after.cpu_seconds - before.cpu_seconds) * 1e9 / bytes, 3);
  row.ok = run.bad == 0 && run.first_error.empty();
  row.check = run.bad ? std::to_string(run.bad) + " wrong replies" : "every value whole";
  return row;
}

}  // namespace

void run_sizes(Bench& bench, const std::vector<long long>& sizes, double seconds) {
  const bool baselines = !bench.options().no_baselines && bench.hiredis_usable();
  std::string listed;
  for (long long s : sizes) listed += (listed.empty() ? "" : ", ") + with_commas(s) + " B";
  Table table;
  table.title = "sizes: SET and GET of " + listed + " values, redmux vs hiredis";
  table.shows =
      "large values are bytes to move: MB/s and the client's CPU per byte show what a client "
      "adds on top of the copy the kernel makes.";
  table.setup = bench.setup_line("1",
                                 "SET then GET of one key, " + fixed(seconds, 1) +
                                     " s per row, window 4 MiB ÷ size (1–100)",
                                 listed) +
                " · " + load_text();
  auto mux = bench.connect("redmux-bench-sizes");
  redmux::Database db = mux->database();
  std::unique_ptr<HiredisConnection> hiredis;
  if (baselines) hiredis = std::make_unique<HiredisConnection>(bench.config());
  const std::string key = Bench::key("sizes", "value");
  RowRuns runs;
  const int repeat = std::max(1, bench.options().repeat);
  for (long long size : sizes) {
    const std::string value = value_of(size);
    const int w = window_for(size);
    Progress progress("sizes: " + with_commas(size) + " B");
    for (int r = 0; r < repeat; ++r) {
      for (const bool get : {false, true}) {
        const std::string op = get ? "get-" : "set-";
        const std::string variant = op + with_commas(size);
        auto before = ProcessUsage::now();
        SizeRun run = redmux_run(db, key, value, get, w, seconds);
        auto after = ProcessUsage::now();
        runs.add(to_row(variant, "redmux", size, w, run, before, after));
        if (hiredis) {
          before = ProcessUsage::now();
          run = hiredis_run(*hiredis, key, value, get, w, seconds);
          after = ProcessUsage::now();
          runs.add(to_row("hiredis-" + variant, "hiredis", size, w, run, before, after));
        }
      }
    }
  }
  table.rows = runs.medians();
  bench.del(key);
  for (const Row& r : table.rows) {
    if (r.client != "redmux") continue;
    for (const Row& h : table.rows) {
      if (h.variant != "hiredis-" + r.variant) continue;
      table.notes.push_back(r.variant +
                            " MB/s, redmux ÷ hiredis = " + fixed(r.ops_per_sec / h.ops_per_sec, 2));
    }
  }
  table.notes.push_back(
      "mb_per_s: value bytes (10^6) per second; cpu_ns_per_byte: this process's CPU (user + "
      "system, every thread) per value byte. hiredis rows free each reply without copying it "
      "out; redmux's GET hands the caller a std::string.");
  bench.report().print(table);
}

}  // namespace redmux_bench
