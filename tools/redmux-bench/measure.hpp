// The second round of measurements (docs/performance.md): a round trip like a network's
// (rtt, through DelayRelay), value sizes (sizes), tail latency at fixed arrival rates
// (open-loop) and a cluster next to one server (cluster); and what they share with modes.
#pragma once

#include <string>
#include <vector>

#include "bench.hpp"

namespace redmux_bench {

/// What the second round's scenarios take from the command line (zero/empty: defaults).
struct MeasureOptions {
  double delay_ms = 0.1;            ///< rtt: the relay's delay each way
  std::vector<long long> sizes;     ///< sizes: value sizes in bytes
  std::vector<long long> percents;  ///< open-loop: arrival rates, % of the measured capacity
  std::string cluster_url;          ///< cluster: a cluster's configuration (scripts/lab)
  std::string ioredis;              ///< open-loop: a node_modules folder that holds ioredis
};

/// The four ways of modes (await-each, issue-then-await, batch, fire-and-forget) and the
/// hiredis rows, N INCRs each, through `config` (the server under test, or a relay in front
/// of it); rows of `scenario`, medians of --repeat runs.
std::vector<Row> modes_rows(Bench& bench, const redmux::Config& config, long long n,
                            const std::string& scenario);
/// ops/s (or, by_time, ms) of variant a ÷ variant b; -1 when either is missing.
double modes_ratio(const std::vector<Row>& rows, const std::string& a, const std::string& b,
                   bool by_time);

/// callers' variants (plain, blocking-face, blocking-face-sleep, deferred-face, and
/// redis-benchmark -P 64 on a standalone server), medians of --repeat interleaved runs;
/// a note when redis-benchmark could not run.
std::vector<Row> callers_rows(Bench& bench, int threads, double seconds, int window,
                              long long redis_benchmark_requests, std::vector<std::string>& notes);

/// "load 1.20 / 3.40 / 5.10 (1, 5, 15 min)" from /proc/loadavg, for setup lines.
std::string load_text();

void run_rtt(Bench& bench, long long commands, double delay_ms);
void run_sizes(Bench& bench, const std::vector<long long>& sizes, double seconds);
void run_open_loop(Bench& bench, int callers, double seconds,
                   const std::vector<long long>& percents, const std::string& ioredis);
void run_cluster(Bench& bench, const std::string& cluster_url, int threads, double seconds);

}  // namespace redmux_bench
