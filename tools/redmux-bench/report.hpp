// Result rows, the tables they print as, and their JSON lines. One Table per experiment: a
// title, one line saying what it shows, the setup line (server, endpoint, threads, commands,
// value size, redmux version, CPUs), the rows, and comparison lines under it. With --json
// every row (and every comparison) is one JSON object on its own line instead.
//
// Not thread-safe: scenarios build rows on the main thread after their workers have joined.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "latency.hpp"

namespace redmux_bench {

/// One extra column of a row: shown in the table under `name`, written to JSON as a number
/// (numeric) or a string. A field may carry the seed write-up's figure for the same
/// measurement: the table shows it in a column "seed" right after this one, the JSON as
/// "seed_<name>".
struct Field {
  std::string name;
  std::string text;
  bool numeric = false;
  std::string seed;  ///< empty: no seed figure
  bool seed_numeric = false;

  Field& with_seed(double value, int decimals);
  Field& with_seed_text(std::string value);
};

/// One measured variant of a scenario. The fixed columns a table shows only when some row
/// has a value there: threads > 0, commands > 0, ms ≥ 0, ops/s > 0, p50/p99 ≥ 0.
struct Row {
  std::string scenario;   ///< "modes", "callers" … (the JSON `scenario`)
  std::string variant;    ///< "await-each", "blocking-face" … (the JSON `variant`)
  std::string client;     ///< "redmux", "hiredis", "redis-benchmark"
  bool baseline = false;  ///< another client, for comparison; marked in the table
  int threads = 1;
  long long commands = 0;  ///< commands completed (or issued, for fire-and-forget)
  double ops_per_sec = 0;
  double p50_us = -1;  ///< negative: not measured
  double p99_us = -1;
  double ms = -1;        ///< total time; negative when the scenario has none
  double seed_ms = -1;   ///< the seed write-up's total time for this variant, if it has one
  double seed_ops = -1;  ///< the seed write-up's ops/s for this variant, if it has one
  bool ok = true;        ///< the harness's own checks passed (counts match the server)
  std::string check;     ///< what was checked, e.g. "counter=10000"
  std::vector<Field> extra;

  void set_latency(const LatencySummary& s) {
    p50_us = s.p50_us;
    p99_us = s.p99_us;
  }
  /// A row for a run of `threads` callers that lasted `run.seconds` and completed
  /// `run.completed` commands with latencies `run.latency`; another client than redmux is a
  /// baseline.
  template <class Run>
  static Row timed(std::string scenario, std::string variant, std::string client, int threads,
                   const Run& run) {
    Row row;
    row.scenario = std::move(scenario);
    row.variant = std::move(variant);
    row.client = std::move(client);
    row.baseline = row.client != "redmux";
    row.threads = threads;
    row.commands = run.completed;
    row.ms = run.seconds * 1000.0;
    row.ops_per_sec = static_cast<double>(run.completed) / run.seconds;
    row.set_latency(run.latency);
    return row;
  }
  Field& add(std::string name, long long value);
  Field& add(std::string name, double value, int decimals);
  Field& add_text(std::string name, std::string value);
};

/// A derived ratio with its target.
struct Comparison {
  std::string scenario;
  std::string name;  ///< "await-each ops/s redmux ÷ hiredis sync"
  double value = 0;
  std::string target;  ///< "≥ 0.95"
  bool met = false;
};

struct Table {
  std::string title;
  std::string shows;  ///< one line: what the table shows
  std::string setup;
  std::vector<Row> rows;
  /// Variant whose ops/s the "vs" column divides by; empty for no such column.
  std::string reference;
  std::vector<Comparison> comparisons;
  std::vector<std::string> notes;  ///< printed under the table
};

/// Rows of repeated runs, grouped by variant (in first-seen order); medians() gives one row
/// per variant: the run with the median ops/s, marked with the number of runs, failed when
/// any run failed its checks.
class RowRuns {
 public:
  void add(Row row);
  std::vector<Row> medians() const;

 private:
  std::vector<std::vector<Row>> by_variant_;
};

/// Where output goes: tables to stdout, or JSON lines to stdout (--json); optionally JSON
/// lines to a file as well (--json-file) while tables still print.
class Report {
 public:
  Report(bool json_to_stdout, const std::string& json_file);
  ~Report();
  Report(const Report&) = delete;
  Report& operator=(const Report&) = delete;

  void print(const Table& table);
  /// Rows that failed their checks so far.
  int failures() const noexcept { return failures_; }

 private:
  void print_text(const Table& table);
  void write_json(std::FILE* out, const Table& table);

  bool json_ = false;
  std::FILE* json_file_ = nullptr;
  int failures_ = 0;
};

/// 1234567 → "1,234,567".
std::string with_commas(long long value);
/// A double with `decimals` digits, thousands separated: 1234.5 → "1,234.5".
std::string fixed(double value, int decimals);

}  // namespace redmux_bench
