// redmux-bench: the experiments of the seed write-ups, each printing a table with its setup
// (or JSON lines with --json). `redmux-bench --help` lists the scenarios; docs/performance.md
// explains how to read them.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "bench.hpp"
#include "measure.hpp"

namespace {

using redmux_bench::Bench;
using redmux_bench::Options;

long long first_or(const std::vector<long long>& values, long long fallback) {
  return values.empty() ? fallback : values.front();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  redmux_bench::MeasureOptions m;
  const char* env_url = std::getenv("REDMUX_URL");
  o.url = env_url && *env_url ? env_url : "localhost:6379";

  CLI::App app{"redmux-bench: the seeds' experiments against a Redis or Valkey server"};
  app.fallthrough();  // options may come before or after the scenario name
  app.require_subcommand(1);
  app.add_option("--url", o.url,
                 "server: a redmux configuration string or redis:// URL "
                 "(default: $REDMUX_URL or localhost:6379)");
  app.add_flag("--json", o.json, "print one JSON object per result row instead of tables");
  app.add_option("--json-file", o.json_file, "also write the JSON rows to this file");
  app.add_option("--threads", o.threads, "callers: threads (default 500; tour 100)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--seconds", o.seconds, "callers: seconds per variant (default 3; tour 2)")
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--window", o.window, "callers: deferred face's window (default 200)")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--commands", o.commands,
                 "modes: INCR counts (default 10000,100000; tour 10000); conn-per-request: "
                 "requests (200); baseline: redis-benchmark -n (1000000); burst: INCRs "
                 "(100000); trap: requests (500)")
      ->delimiter(',')
      ->check(CLI::Range(0LL, 1000000000LL));
  app.add_option("--client", o.client, "burst: redmux or hiredis")
      ->check(CLI::IsMember({"redmux", "hiredis"}));
  app.add_flag("--counting-hook", o.counting_hook,
               "burst: install a Multiplexer::on_command() hook that counts (its cost; "
               "latencyHistograms=true in --url for the histograms')");
  app.add_flag("--histograms", o.histograms,
               "modes, callers: latencyHistograms=true, and rows add the multiplexer's own "
               "p50/p99 of INCR until delivered (hist_p50_us, hist_p99_us) beside the bench's");
  app.add_option("--repeat", o.repeat,
                 "modes, callers: run every variant N times, interleaved, and report the "
                 "median run by ops/s (default 1)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--keys", o.keys,
                 "callers: counters the threads share, thread t INCRs counter t mod N (default "
                 "1; use e.g. 64 against a cluster so the load spreads over its primaries)")
      ->check(CLI::Range(1, 100000));
  app.add_option(
         "--only", o.only,
         "callers, cluster: run only these variants (plain, blocking-face, "
         "blocking-face-sleep, deferred-face, redis-benchmark-c1-P1000, "
         "redis-benchmark-c50-P64; callers also handoff-model, the scheduling ceiling, run only "
         "when named), e.g. for perf stat")
      ->delimiter(',');
  app.add_flag("--no-baselines", o.no_baselines, "leave out the hiredis and redis-benchmark rows");
  app.add_flag("--full", o.full, "tour: every experiment at the seeds' sizes (a million keys …)");
  app.add_option("--replicas-url", o.replicas_url,
                 "replicas, tour: a primary and its replicas (e.g. what `scripts/lab start "
                 "replicas` prints)");
  app.add_option("--io-threads-url", o.io_threads_url,
                 "io-threads, tour: a server started with --io-threads 4 --io-threads-do-reads "
                 "yes");
  app.add_option("--wait-policy", o.wait_policy,
                 "how a blocked get() waits: adaptive (yields, then sleeps; the default) or "
                 "sleep (redmux::WaitPolicy); callers also runs a blocking-face-sleep row")
      ->check(CLI::IsMember({"adaptive", "sleep"}));

  app.add_option("--delay-ms", m.delay_ms, "rtt: the relay's delay each way (default 0.1)")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--sizes", m.sizes, "sizes: value sizes in bytes (default 16,1024,65536,1048576)")
      ->delimiter(',')
      ->check(CLI::Range(1LL, 512LL << 20));
  app.add_option("--percents", m.percents,
                 "open-loop: arrival rates in % of each client's capacity (default 25,50,80)")
      ->delimiter(',')
      ->check(CLI::Range(1LL, 200LL));
  app.add_option("--cluster-url", m.cluster_url,
                 "cluster: a Redis Cluster's configuration (what `scripts/lab start cluster` "
                 "prints)");
  app.add_option("--ioredis", m.ioredis,
                 "open-loop: a node_modules folder holding ioredis (default "
                 "$REDMUX_BENCH_IOREDIS; without it the ioredis rows are skipped)");

  auto* conn = app.add_subcommand("conn-per-request",
                                  "a multiplexer per request vs one shared (connection counts)");
  auto* modes = app.add_subcommand(
      "modes", "N INCRs: await each, issue then await, Batch, FireAndForget (+ hiredis)");
  auto* callers = app.add_subcommand(
      "callers", "T threads for D s: plain hiredis, blocking face, deferred face");
  auto* baseline = app.add_subcommand("baseline", "redis-benchmark -t incr -c 1 -P 64 as a row");
  auto* burst = app.add_subcommand(
      "burst", "only the issue-then-await burst of N INCRs (for callgrind; --client)");
  auto* trap = app.add_subcommand("trap", "sync over async: get() on an I/O thread vs co_await");
  auto* keyspace = app.add_subcommand(
      "keyspace",
      "KEYS vs SCAN with a PINGing client, and long vs short key names (--commands N keys)");
  auto* monitor = app.add_subcommand(
      "monitor", "an unread MONITOR's memory, CLIENT KILL, and a reading MONITOR's cost");
  auto* pubsub_limit = app.add_subcommand(
      "pubsub-limit", "a shared subscription connection vs the pubsub output limit");
  auto* replicas =
      app.add_subcommand("replicas", "GETs on the primary vs PreferReplica (--replicas-url)");
  auto* io_threads = app.add_subcommand(
      "io-threads",
      "a server without/with I/O threads, connectionsPerEndpoint 1 and 4 (--io-threads-url)");
  auto* cache = app.add_subcommand(
      "cache", "GETs uncached vs clientCache=true, and with a writer's invalidations");
  auto* rtt = app.add_subcommand(
      "rtt", "modes' four ways and hiredis through a relay adding --delay-ms each way");
  auto* sizes_cmd = app.add_subcommand(
      "sizes", "SET and GET of 16 B … 1 MiB values (--sizes): MB/s and CPU per byte (+ hiredis)");
  auto* open_loop = app.add_subcommand(
      "open-loop",
      "500 callers at 25/50/80 % of capacity, INCR and GET: p50 … max from intended send times");
  auto* cluster = app.add_subcommand(
      "cluster", "callers on --url vs a cluster (--cluster-url), 200 threads, --keys 64");
  auto* tour = app.add_subcommand(
      "tour", "every experiment at demo sizes, or the seeds' with --full (scripts/demo)");
  auto* all = app.add_subcommand(
      "all", "conn-per-request, modes (both sizes), callers and trap, with the baselines");

  CLI11_PARSE(app, argc, argv);
  // 0 INCRs is a run of its own only for burst: scripts/callgrind-per-incr subtracts its
  // setup with it. Elsewhere it would print rows of nothing.
  if (!burst->parsed() && std::find(o.commands.begin(), o.commands.end(), 0) != o.commands.end()) {
    return app.exit(
        CLI::ValidationError("--commands", "0 is only for burst (its empty run); give 1 or more"));
  }

  redmux::set_wait_policy(o.wait_policy == "sleep" ? redmux::WaitPolicy::Sleep
                                                   : redmux::WaitPolicy::Adaptive);
  try {
    if (burst->parsed()) return redmux_bench::run_burst(o, first_or(o.commands, 100000));
    Bench bench(o);
    const int threads = o.threads ? o.threads : 500;
    const double seconds = o.seconds > 0 ? o.seconds : 3.0;
    const int window = o.window ? o.window : 200;
    const std::vector<long long> sizes =
        o.commands.empty() ? std::vector<long long>{10000, 100000} : o.commands;
    if (conn->parsed()) redmux_bench::run_conn_per_request(bench, first_or(o.commands, 200));
    if (modes->parsed()) redmux_bench::run_modes(bench, sizes);
    if (callers->parsed()) redmux_bench::run_callers(bench, threads, seconds, window, 1000000);
    if (baseline->parsed()) redmux_bench::run_baseline(bench, first_or(o.commands, 1000000));
    if (trap->parsed()) redmux_bench::run_trap(bench, static_cast<int>(first_or(o.commands, 500)));
    if (keyspace->parsed()) redmux_bench::run_keyspace(bench, first_or(o.commands, 1000000));
    if (monitor->parsed()) {
      redmux_bench::run_monitor(bench, first_or(o.commands, 200000), first_or(o.commands, 200000));
    }
    if (pubsub_limit->parsed()) redmux_bench::run_pubsub_limit(bench);
    if (replicas->parsed())
      redmux_bench::run_replicas(bench, o.threads ? o.threads : 100,
                                 o.seconds > 0 ? o.seconds : 5.0);
    if (io_threads->parsed()) redmux_bench::run_io_threads(bench, threads, seconds);
    if (cache->parsed()) {
      redmux_bench::run_cache(bench, o.threads ? o.threads : 8, o.seconds > 0 ? o.seconds : 3.0);
    }
    if (rtt->parsed()) redmux_bench::run_rtt(bench, first_or(o.commands, 10000), m.delay_ms);
    if (sizes_cmd->parsed()) {
      redmux_bench::run_sizes(
          bench, m.sizes.empty() ? std::vector<long long>{16, 1024, 65536, 1048576} : m.sizes,
          o.seconds > 0 ? o.seconds : 1.0);
    }
    if (open_loop->parsed()) {
      redmux_bench::run_open_loop(
          bench, threads, o.seconds > 0 ? o.seconds : 2.0,
          m.percents.empty() ? std::vector<long long>{25, 50, 80} : m.percents, m.ioredis);
    }
    if (cluster->parsed()) {
      redmux_bench::run_cluster(bench, m.cluster_url, o.threads ? o.threads : 200, seconds);
    }
    if (tour->parsed()) redmux_bench::run_tour(bench);
    if (all->parsed()) {
      redmux_bench::run_conn_per_request(bench, 200);
      redmux_bench::run_modes(bench, {10000, 100000});
      redmux_bench::run_callers(bench, threads, seconds, window, 1000000);
      redmux_bench::run_trap(bench, 500);
    }
    if (bench.report().failures()) {
      std::fprintf(stderr, "redmux-bench: %d row(s) FAILED their checks (see the check column)\n",
                   bench.report().failures());
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "redmux-bench: %s\n", e.what());
    return 1;
  }
}
