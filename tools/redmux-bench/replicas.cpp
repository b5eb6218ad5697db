// replicas (seed 001, "The two configs we never read"): a primary and two replicas (the lab's
// topology, --replicas-url), T threads of GETs for D seconds on one multiplexer: reads on the
// primary only (the default, PreferMaster) vs Flags::PreferReplica. Where the reads went is
// read from each server's INFO commandstats (cmdstat_get, after CONFIG RESETSTAT), through a
// hiredis connection to each one: the public API has no handle for one named server.
#include <thread>

#include "bench.hpp"
#include "hiredis_client.hpp"

namespace redmux_bench {

namespace {

constexpr int kKeys = 100;

std::string read_key(int i) {
  return Bench::key("replicas", "book:" + std::to_string(i));
}

long long get_calls(HiredisConnection& server) {
  const std::string info = server.command({"INFO", "commandstats"});
  return command_stat(redmux::InfoSections::parse(info), "get").calls;
}

}  // namespace

void run_replicas(Bench& bench, int threads, double seconds) {
  const Options& o = bench.options();
  Table table;
  table.title =
      "replicas: " + std::to_string(threads) + " threads of GET, primary only vs PreferReplica";
  table.shows =
      "PreferReplica spreads reads over the replicas; on real hardware that is the seed's 5×, "
      "here the three servers and the client share 2 cores.";
  if (o.replicas_url.empty()) {
    table.setup = bench.setup_line("—", "—");
    table.notes.push_back(
        "skipped: needs --replicas-url (a primary and its replicas, as `scripts/lab start "
        "replicas` prints; scripts/demo starts them).");
    bench.report().print(table);
    return;
  }
  redmux::Config config = redmux::Config::from_string(o.replicas_url);
  config.name = "redmux-bench-replicas";
  std::vector<std::unique_ptr<HiredisConnection>> servers;
  for (const redmux::Endpoint& ep : config.endpoints) {
    servers.push_back(std::make_unique<HiredisConnection>(config, ep));
  }
  auto mux = redmux::Multiplexer::connect(config);
  redmux::Database db = mux->database();
  const redmux::ServerIdentity identity = mux->server_identity();
  std::string endpoints;
  for (const redmux::Endpoint& ep : config.endpoints) {
    endpoints += (endpoints.empty() ? "" : ", ") + ep.to_string();
  }
  table.setup = "setup: " + identity.product + " " + identity.version + " primary + " +
                std::to_string(config.endpoints.size() - 1) + " replicas at " + endpoints +
                " · threads " + std::to_string(threads) + " · GET of " + std::to_string(kKeys) +
                " keys for " + fixed(seconds, 1) + " s · redmux " + std::string(redmux::kVersion) +
                " · " + std::to_string(std::thread::hardware_concurrency()) + " CPUs";
  for (int i = 0; i < kKeys; ++i) (void)db.set(read_key(i), "title " + std::to_string(i)).get();
  // Every replica has the keys before reads go there.
  (void)db.execute({"WAIT", std::to_string(config.endpoints.size() - 1), "5000"}).get();

  // Which of the servers is the primary: the one whose INFO replication says role:master.
  std::vector<std::string> roles;
  for (auto& server : servers) {
    const auto info = redmux::InfoSections::parse(server->command({"INFO", "replication"}));
    roles.push_back(std::string(info.get("replication", "role").value_or("?")));
  }

  const struct {
    const char* variant;
    redmux::Flags flags;
  } variants[] = {{"primary-only", redmux::Flags::None},
                  {"prefer-replica", redmux::Flags::PreferReplica}};
  double primary_ops = 0;
  for (const auto& v : variants) {
    for (auto& server : servers) server->command({"CONFIG", "RESETSTAT"});
    const redmux::Flags flags = v.flags;
    const LoopRun run =
        run_callers_loop(threads, seconds, std::string("replicas: ") + v.variant,
                         [&](int t) { (void)db.get(read_key(t % kKeys), flags).get(); });
    Row row = Row::timed("replicas", v.variant, "redmux", threads, run);
    long long counted = 0;
    for (std::size_t i = 0; i < servers.size(); ++i) {
      const long long calls = get_calls(*servers[i]);
      counted += calls;
      row.add((roles[i] == "master" ? "gets_primary_" : "gets_replica_") +
                  std::to_string(config.endpoints[i].port),
              calls);
    }
    if (primary_ops == 0) primary_ops = row.ops_per_sec;
    row.add("x_primary_only", row.ops_per_sec / primary_ops, 2)
        .with_seed(std::string_view(v.variant) == "prefer-replica" ? 5.0 : 1.0, 1);
    row.ok = counted == run.completed && run.errors == 0;
    row.check = "GETs counted by the servers: " + with_commas(counted);
    if (run.errors) row.check += ", errors " + std::to_string(run.errors) + ": " + run.first_error;
    table.rows.push_back(std::move(row));
  }
  for (int i = 0; i < kKeys; ++i) (void)db.del(read_key(i)).get();
  table.notes.push_back(
      "seed 001: PreferReplica on the reads \"gave us a clean 5x improvement on read "
      "throughput\" — replicas on their own machines, each adding CPUs. On one machine with two "
      "cores the three servers and the client's threads share those cores, so spreading the "
      "reads cannot multiply throughput: what carries over is the distribution (gets_* "
      "columns, from each server's INFO commandstats).");
  bench.report().print(table);
}

}  // namespace redmux_bench
