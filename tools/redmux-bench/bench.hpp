// What every scenario of redmux-bench shares: the command-line options, the server under
// test (its Config, identity and an observer multiplexer for INFO and checks), the setup
// line printed over each table, key names, and progress lines for long steps.
//
// Threads: a Bench is used from the main thread only; scenario worker threads get their
// own Database or hiredis connection and never touch it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <redmux/redmux.hpp>

#include "latency.hpp"
#include "report.hpp"

namespace redmux_bench {

/// Command-line options. Zero / empty means "the scenario's default".
struct Options {
  std::string url;        ///< configuration string or redis:// URL
  bool json = false;      ///< JSON lines on stdout instead of tables
  std::string json_file;  ///< JSON lines to this file as well
  int threads = 0;
  double seconds = 0;
  int window = 0;
  std::vector<long long> commands;
  std::string client = "redmux";  ///< burst: redmux | hiredis
  bool counting_hook = false;     ///< burst: install a command hook that counts
  bool histograms = false;        ///< latencyHistograms=true: rows add the multiplexer's p50/p99
  bool no_baselines = false;      ///< skip hiredis and redis-benchmark rows
  std::string wait_policy = "adaptive";  ///< how get() waits: adaptive or sleep
  int repeat = 1;                        ///< modes, callers: runs per variant (median reported)
  int keys = 1;              ///< callers: counters the threads share (thread t uses key t mod keys)
  bool full = false;         ///< tour: the seeds' sizes instead of the demo's
  std::string replicas_url;  ///< replicas: a primary and its replicas (scripts/lab replicas)
  std::string io_threads_url;     ///< io-threads: a server started with io-threads 4
  std::vector<std::string> only;  ///< callers: run only these variants (empty: all)
};

/// One command's line of INFO commandstats.
struct CommandStat {
  long long calls = 0;
  double usec_per_call = 0;
};

/// "cmdstat_scan:calls=2000,usec=616106,usec_per_call=308.05,…" → {2000, 308.05}; zeros
/// when `command` is not in `info` (INFO commandstats' text or parsed sections).
CommandStat command_stat(const redmux::InfoSections& info, std::string_view command);
/// used_memory in MiB (the unit of INFO's used_memory_human "M").
double mib(long long bytes);

class Bench {
 public:
  /// Parses the URL and connects the observer (abortConnect as configured: by default a
  /// server that does not answer is an error here, before any scenario runs).
  explicit Bench(Options options);

  const Options& options() const noexcept { return options_; }
  Report& report() noexcept { return report_; }
  /// The parsed configuration (name=redmux-bench unless the URL names the client).
  const redmux::Config& config() const noexcept { return config_; }
  /// The configuration with another client name (for the connections a scenario opens).
  redmux::Config config_named(std::string_view name) const;
  /// A new multiplexer on the server under test, with client name `name`.
  std::shared_ptr<redmux::Multiplexer> connect(std::string_view name) const;

  /// The multiplexer used for INFO, DEL and read-back checks (opened once).
  redmux::Database observer() const { return observer_->database(); }
  /// A Database of a multiplexer with allowAdmin=true, for KEYS, CONFIG, CLIENT KILL and
  /// FLUSHDB (opened on first use, named "<client>-admin").
  redmux::Database admin() const;
  /// The database under test holds no key: the experiments that write a million keys and
  /// FLUSHDB afterwards run only then (a throwaway server, as scripts/demo starts).
  bool database_empty() const;
  /// An integer field of INFO (total_connections_received, connected_clients …).
  long long info_integer(std::string_view section, std::string_view field) const;
  /// GET key as an integer (0 when missing).
  long long counter(const std::string& key) const;
  void del(const std::string& key) const;
  /// "redmux-bench:<scenario>:<variant>".
  static std::string key(std::string_view scenario, std::string_view variant);
  /// The server under test is a Redis Cluster node (HELLO mode).
  bool is_cluster() const noexcept { return identity_.mode == "cluster"; }

  /// "setup: redis 7.0.15 (standalone, RESP3) at 127.0.0.1:6379 · threads … · redmux 0.1.0
  /// · 2 CPUs".
  std::string setup_line(std::string_view threads, std::string_view commands,
                         std::string_view values = "integer counters (INCR)") const;
  /// "redis 7.0.15".
  std::string server_text() const;
  bool hiredis_usable() const { return !config_.ssl; }

 private:
  Options options_;
  Report report_;
  redmux::Config config_;
  std::shared_ptr<redmux::Multiplexer> observer_;
  mutable std::shared_ptr<redmux::Multiplexer> admin_;
  redmux::ServerIdentity identity_;
};

/// The client process's CPU time and context switches (getrusage: every thread of this
/// process, the I/O threads included; not the server).
struct ProcessUsage {
  double cpu_seconds = 0;  ///< user + system
  long switches = 0;       ///< voluntary + involuntary context switches
  static ProcessUsage now();
};

/// Adds cpu_us_per_op (client CPU per command) and switches_per_op to `row`.
void add_usage(Row& row, const ProcessUsage& before, const ProcessUsage& after, long long commands);

/// The multiplexer's own histogram of `command` until delivered (latencyHistograms=true;
/// empty when off): snapshots before and after a run give the run's.
redmux::LatencyHistogram delivered_histogram(const redmux::Multiplexer& mux,
                                             std::string_view command);
/// Adds hist_n, hist_p50_us and hist_p99_us: the commands the multiplexer's histogram
/// recorded between `before` and `after` (snapshots of delivered_histogram()), beside the
/// row's own p50/p99 (its samples: call to get() returned). Nothing when none was recorded.
void add_histogram_latency(Row& row, const redmux::LatencyHistogram& before,
                           const redmux::LatencyHistogram& after);

/// A progress line on stderr for a step that may take more than a second or two. On a
/// terminal it ticks the elapsed seconds in place; otherwise it prints a start and an end line.
class Progress {
 public:
  explicit Progress(std::string what);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  std::string what_;
  Clock::time_point start_;
  bool tty_ = false;
  std::atomic<bool> done_{false};
  std::thread ticker_;
};

// Scenarios (one file each).
void run_conn_per_request(Bench& bench, int requests);
void run_modes(Bench& bench, const std::vector<long long>& sizes);
void run_callers(Bench& bench, int threads, double seconds, int window,
                 long long redis_benchmark_requests);
/// One redis-benchmark run against the server under test.
struct RedisBenchmark {
  std::string test = "incr";  ///< -t
  int clients = 1;            ///< -c
  int pipeline = 1;           ///< -P
  long long requests = 100000;
  int data_size = 3;  ///< -d (redis-benchmark's default is 3 bytes)
  std::string label;  ///< for the progress line
};
/// Runs it and fills `row`'s client, threads, commands, ops/s, ms, p50/p99 and check (the
/// caller names the scenario and variant); false, with a note, when it could not run.
bool redis_benchmark_run(Bench& bench, const RedisBenchmark& run, Row& row,
                         std::vector<std::string>& notes);
/// redis_benchmark_run() as a row of `scenario` named `variant`, with its connections (-c) and
/// window (-P) as columns.
bool redis_benchmark_row(Bench& bench, const RedisBenchmark& run, std::string scenario,
                         std::string variant, Row& row, std::vector<std::string>& notes);
void run_baseline(Bench& bench, long long requests);
/// Runs without a Bench (no observer connection): the burst alone, for callgrind.
int run_burst(const Options& options, long long commands);
void run_trap(Bench& bench, int requests);
void run_tour(Bench& bench);
/// Seed 000's keyspace experiments on N keys: KEYS vs SCAN with a PINGing client, and the
/// memory of long vs short key names (two tables).
void run_keyspace(Bench& bench, long long keys);
/// Seed 000's unread MONITOR (N SETs of 512 bytes) and the cost of a reading one.
void run_monitor(Bench& bench, long long sets, long long benchmark_requests);
/// Seed 000's ★★★ exercise: a shared subscription connection vs the pubsub output limit.
void run_pubsub_limit(Bench& bench);
/// Seed 001: reads on the primary only vs PreferReplica (needs Options::replicas_url).
void run_replicas(Bench& bench, int threads, double seconds);
/// Seed 001: a server with and without I/O threads, connectionsPerEndpoint 1 and 4 (needs
/// Options::io_threads_url).
void run_io_threads(Bench& bench, int threads, double seconds);

/// Cached vs uncached GET (clientCache), with and without a writer's invalidations.
void run_cache(Bench& bench, int threads, double seconds);

/// What run_callers_loop measured.
struct LoopRun {
  double seconds = 0;
  long long completed = 0;
  long long errors = 0;
  std::string first_error;
  LatencySummary latency;
};
/// `threads` threads, started together, each calling op(t) — one command, awaited — until
/// `seconds` have passed; an exception from op counts as an error. `what` names the
/// progress line.
LoopRun run_callers_loop(int threads, double seconds, const std::string& what,
                         const std::function<void(int)>& op);

}  // namespace redmux_bench
