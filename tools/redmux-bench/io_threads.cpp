// io-threads (seed 001: io-threads 4, io-threads-do-reads yes): the blocking face's
// many-callers run — T threads, each INCRs counter t mod 64 with get() — against the server
// under test and against a second one started with I/O threads (--io-threads-url), each with
// connectionsPerEndpoint=1 and =4. A server I/O thread handles whole connections: with one
// connection the server has one socket to read, whatever its io-threads.
#include <thread>

#include "bench.hpp"
#include "hiredis_client.hpp"

namespace redmux_bench {

namespace {

constexpr int kKeys = 64;

std::string counter_key(int i) {
  return Bench::key("io-threads", std::to_string(i));
}

Row run_one(const redmux::Config& base, const std::string& server, int io_threads, int connections,
            int threads, double seconds) {
  redmux::Config config = base;
  config.name = "redmux-bench-io-threads";
  config.connections_per_endpoint = connections;
  auto mux = redmux::Multiplexer::connect(config);
  redmux::Database db = mux->database();
  for (int k = 0; k < kKeys; ++k) (void)db.del(counter_key(k)).get();
  const long long reads_before =
      db.info("stats").get().get_integer("stats", "io_threaded_reads_processed").value_or(0);
  const std::string variant = server + "-cpe" + std::to_string(connections);
  const LoopRun run = run_callers_loop(threads, seconds, "io-threads: " + variant,
                                       [&](int t) { (void)db.incr(counter_key(t % kKeys)).get(); });
  long long counted = 0;
  for (int k = 0; k < kKeys; ++k) {
    const auto v = db.get(counter_key(k)).get();
    if (v) counted += std::stoll(*v);
    (void)db.del(counter_key(k)).get();
  }
  const redmux::InfoSections stats = db.info("stats").get();
  Row row = Row::timed("io-threads", variant, "redmux", threads, run);
  Field& f = row.add("server_io_threads", static_cast<long long>(io_threads));
  if (io_threads > 1) f.with_seed(4, 0);
  row.add("connections", static_cast<long long>(mux->status().connections));
  row.add("threaded_reads",
          stats.get_integer("stats", "io_threaded_reads_processed").value_or(0) - reads_before);
  row.ok = counted >= run.completed && counted <= run.completed + run.errors;
  row.check = "counters=" + with_commas(counted);
  if (run.errors) row.check += " errors=" + std::to_string(run.errors) + ": " + run.first_error;
  return row;
}

// The plain client for comparison: hiredis, a connection per thread — as many sockets as
// threads, which is what a server's I/O threads need to have work.
Row run_plain(const redmux::Config& config, const std::string& server, int io_threads, int threads,
              double seconds) {
  std::vector<std::unique_ptr<HiredisConnection>> connections;
  for (int t = 0; t < threads; ++t)
    connections.push_back(std::make_unique<HiredisConnection>(config));
  for (int k = 0; k < kKeys; ++k) connections[0]->del(counter_key(k));
  auto threaded_reads = [&] {
    const auto stats = redmux::InfoSections::parse(connections[0]->command({"INFO", "stats"}));
    return stats.get_integer("stats", "io_threaded_reads_processed").value_or(0);
  };
  const long long reads_before = threaded_reads();
  const std::string variant = server + "-plain";
  const LoopRun run =
      run_callers_loop(threads, seconds, "io-threads: " + variant + " (hiredis)",
                       [&](int t) { connections[t]->incr(counter_key(t % kKeys)); });
  long long counted = 0;
  for (int k = 0; k < kKeys; ++k) {
    counted += connections[0]->get_counter(counter_key(k));
    connections[0]->del(counter_key(k));
  }
  const long long reads = threaded_reads() - reads_before;
  Row row = Row::timed("io-threads", variant, "hiredis", threads, run);
  Field& f = row.add("server_io_threads", static_cast<long long>(io_threads));
  if (io_threads > 1) f.with_seed(4, 0);
  row.add("connections", static_cast<long long>(threads));
  row.add("threaded_reads", reads);
  row.ok = counted >= run.completed && counted <= run.completed + run.errors;
  row.check = "counters=" + with_commas(counted);
  return row;
}

}  // namespace

void run_io_threads(Bench& bench, int threads, double seconds) {
  const Options& o = bench.options();
  Table table;
  table.title = "io-threads: " + std::to_string(threads) +
                " threads INCRing, a server without and with I/O threads, 1 and 4 connections";
  table.shows =
      "a server I/O thread serves whole connections: one connection keeps the server's reads "
      "on one thread; connectionsPerEndpoint=4 gives its I/O threads sockets to share.";
  table.setup =
      bench.setup_line(std::to_string(threads), "INCR of " + std::to_string(kKeys) +
                                                    " keys (thread t: key t mod 64) with get(), " +
                                                    fixed(seconds, 1) + " s per row");
  if (o.io_threads_url.empty()) {
    table.notes.push_back(
        "skipped: needs --io-threads-url (a server started with --io-threads 4 "
        "--io-threads-do-reads yes; scripts/demo starts one).");
    bench.report().print(table);
    return;
  }
  const redmux::Config io = redmux::Config::from_string(o.io_threads_url);
  long long io_count = 4;
  {
    redmux::Config admin = io;
    admin.allow_admin = true;
    auto admin_mux = redmux::Multiplexer::connect(admin);
    const redmux::Reply reply =
        admin_mux->database().execute({"CONFIG", "GET", "io-threads"}).get();
    if (reply.size() == 2) io_count = std::stoll(std::string(reply.elements()[1].text()));
  }
  // Rows alternate servers (a, b, a, b) so that a drift in the machine's load hits both.
  for (const int connections : {1, 4}) {
    table.rows.push_back(
        run_one(bench.config(), "no-io-threads", 1, connections, threads, seconds));
    table.rows.push_back(run_one(io, "io-threads-" + std::to_string(io_count),
                                 static_cast<int>(io_count), connections, threads, seconds));
  }
  if (!o.no_baselines) {
    table.rows.push_back(run_plain(bench.config(), "no-io-threads", 1, threads, seconds));
    table.rows.push_back(run_plain(io, "io-threads-" + std::to_string(io_count),
                                   static_cast<int>(io_count), threads, seconds));
  }
  table.reference = "no-io-threads-cpe1";
  table.notes.push_back(
      "seed 001 turned on io-threads 4 and io-threads-do-reads yes; it published no figure for "
      "that change alone. threaded_reads: the server's io_threaded_reads_processed during the "
      "row. Redis 7 turns its I/O threads on only while at least 2 × io-threads clients "
      "have replies pending: one multiplexer's 1 or 4 connections never do, a connection "
      "per thread (the hiredis rows) does.");
  table.notes.push_back(
      "on 2 cores the server's I/O threads compete with the client's threads and the main "
      "thread: what the table shows is how work is split, not what 4 free cores would give. "
      "Redis's I/O threads spin while they wait for work, so io-threads above the cores the "
      "server has to itself can cost far more than they give (the io-threads hiredis row).");
  bench.report().print(table);
}

}  // namespace redmux_bench
