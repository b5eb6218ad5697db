// tour: the seeds' experiments at sizes that fit in a demo (about 15 s against a local
// server): connection-per-request vs shared, the four ways of sending 10,000 INCRs, the
// callers table with 100 threads for 2 s, and the sync-over-async trap.
#include <cstdio>

#include "bench.hpp"

namespace redmux_bench {

void run_tour(Bench& bench) {
  const Options& o = bench.options();
  if (!o.json) {
    std::printf(
        "redmux tour: the experiments of the seeds, against %s.\n"
        "Every table says what it shows, then its setup; rows marked (baseline) are other "
        "clients for comparison.\n",
        bench.server_text().c_str());
    std::fflush(stdout);  // before the first progress line on stderr
  }
  run_conn_per_request(bench, 200);
  run_modes(bench, o.commands.empty() ? std::vector<long long>{10000} : o.commands);
  run_callers(bench, o.threads ? o.threads : 100, o.seconds > 0 ? o.seconds : 2.0,
              o.window ? o.window : 200, 500000);
  run_trap(bench, 500);
}

}  // namespace redmux_bench
