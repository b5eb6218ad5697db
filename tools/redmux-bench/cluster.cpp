// cluster: the callers experiment on one server (--url) and on a Redis
// Cluster (--cluster-url; e.g. what `scripts/lab start cluster` prints: 3 primaries with a
// replica each), alternated run by run, at 200 threads. The threads INCR --keys counters
// (default 64; thread t: counter t mod 64), so the cluster's load spreads over its primaries.
// Every row checks its counters against the servers as callers does.
#include <algorithm>
#include <stdexcept>

#include "measure.hpp"

namespace redmux_bench {

void run_cluster(Bench& bench, const std::string& cluster_url, int threads, double seconds) {
  if (cluster_url.empty()) {
    throw std::runtime_error(
        "cluster needs --cluster-url (a Redis Cluster; scripts/lab start cluster prints one)");
  }
  Options single_options = bench.options();
  single_options.json = false;
  single_options.json_file.clear();
  single_options.repeat = 1;
  if (single_options.keys <= 1) single_options.keys = 64;
  Options cluster_options = single_options;
  cluster_options.url = cluster_url;
  Bench single(single_options);
  Bench cluster(cluster_options);
  if (!cluster.is_cluster()) {
    throw std::runtime_error("cluster: --cluster-url " + cluster_url + " is not a cluster node");
  }
  const int window = bench.options().window ? bench.options().window : 200;
  Table table;
  table.title = "cluster: " + std::to_string(threads) + " threads × " + fixed(seconds, 1) +
                " s of INCR, one server vs a cluster";
  table.shows =
      "the same callers on one server and on a cluster on the same cores: routing by slot "
      "per command, a connection per node; the cluster's extra processes share the CPUs.";
  table.setup =
      bench.setup_line(std::to_string(threads),
                       "INCR of " + std::to_string(single_options.keys) +
                           " keys (thread t: key t mod " + std::to_string(single_options.keys) +
                           ") for " + fixed(seconds, 1) + " s, window " + std::to_string(window)) +
      " · cluster " + cluster.config().endpoints.front().to_string() + " (" +
      std::to_string(cluster.config().endpoints.size()) + " endpoints given) · " + load_text();
  RowRuns runs;
  const int repeat = std::max(1, bench.options().repeat);
  for (int r = 0; r < repeat; ++r) {
    for (Bench* b : {&single, &cluster}) {
      std::vector<std::string> notes;
      for (Row row : callers_rows(*b, threads, seconds, window, 0, notes)) {
        row.scenario = "cluster";
        row.variant += b == &single ? "@single" : "@cluster";
        runs.add(std::move(row));
      }
    }
  }
  table.rows = runs.medians();
  for (const Row& s : table.rows) {
    const auto at = s.variant.find("@single");
    if (at == std::string::npos) continue;
    const std::string base = s.variant.substr(0, at);
    for (const Row& c : table.rows) {
      if (c.variant != base + "@cluster") continue;
      const double ratio = c.ops_per_sec / s.ops_per_sec;
      table.notes.push_back(base + " ops/s, cluster ÷ single server = " + fixed(ratio, 2));
    }
  }
  table.notes.push_back(
      "@single: --url; @cluster: --cluster-url. plain: hiredis, a connection per thread to "
      "its key's node. The cluster's replicas replicate every INCR on the same cores.");
  bench.report().print(table);
}

}  // namespace redmux_bench
