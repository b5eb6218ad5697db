// What every scenario of redmux-bench shares: the command-line options, the server under
// test (its Config, identity and an observer multiplexer for INFO and checks), the setup
// line printed over each table, key names, and progress lines for long steps.
//
// Threads: a Bench is used from the main thread only; scenario worker threads get their
// own Database or hiredis connection and never touch it.
#pragma once

#include <atomic>
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
  std::string client = "redmux";         ///< burst: redmux | hiredis
  bool no_baselines = false;             ///< skip hiredis and redis-benchmark rows
  std::string wait_policy = "adaptive";  ///< how get() waits: adaptive or sleep
  int repeat = 1;                        ///< modes, callers: runs per variant (median reported)
  int keys = 1;  ///< callers: counters the threads share (thread t uses key t mod keys)
};

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
/// redis-benchmark -t incr -c 1 -P 64 as a row, or no row when it is not on PATH (a note
/// in `notes` says so).
bool redis_benchmark_row(Bench& bench, long long requests, int pipeline, Row& row,
                         std::vector<std::string>& notes);
void run_baseline(Bench& bench, long long requests);
/// Runs without a Bench (no observer connection): the burst alone, for callgrind.
int run_burst(const Options& options, long long commands);
void run_trap(Bench& bench, int requests);
void run_tour(Bench& bench);

}  // namespace redmux_bench
