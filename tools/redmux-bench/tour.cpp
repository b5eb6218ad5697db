// tour: the seeds' experiments, each at a size that fits a demo (about a minute against a
// local server in all) or, with --full, at the seeds' own sizes: connection-per-request vs
// shared, the four ways of sending INCRs, many callers on one multiplexer, the
// sync-over-async trap, KEYS vs SCAN and the memory of key names, the unread MONITOR, a
// shared subscription connection vs the pubsub output limit, reads on replicas
// (--replicas-url) and a server with I/O threads (--io-threads-url).
#include <cstdio>

#include "bench.hpp"

namespace redmux_bench {

void run_tour(Bench& bench) {
  const Options& o = bench.options();
  const bool full = o.full;
  if (!o.json) {
    std::printf(
        "redmux tour%s: the experiments of the seeds, against %s.\n"
        "Every table says what it shows, then its setup; rows marked (baseline) are other "
        "clients for comparison, figures in parentheses under \"seed\" are the seed "
        "write-up's own.\n",
        full ? " (--full: the seeds' sizes)" : "", bench.server_text().c_str());
    std::fflush(stdout);  // before the first progress line on stderr
  }
  const int threads = o.threads ? o.threads : (full ? 500 : 100);
  const double seconds = o.seconds > 0 ? o.seconds : (full ? 3.0 : 2.0);
  run_conn_per_request(bench, 200);
  run_modes(bench, o.commands.empty() ? (full ? std::vector<long long>{10000, 100000}
                                              : std::vector<long long>{10000})
                                      : o.commands);
  run_callers(bench, threads, seconds, o.window ? o.window : 200, full ? 1000000 : 500000);
  run_trap(bench, 500);
  run_keyspace(bench, full ? 1000000 : 200000);
  run_monitor(bench, full ? 200000 : 100000, full ? 200000 : 100000);
  run_pubsub_limit(bench);
  run_replicas(bench, 100, full ? 5.0 : 2.0);
  run_io_threads(bench, threads, seconds);
}

}  // namespace redmux_bench
