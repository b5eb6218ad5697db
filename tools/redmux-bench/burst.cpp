// burst: only the issue-then-await burst of N INCRs, for counting client instructions per
// INCR with callgrind (scripts/callgrind-per-incr). The burst is a free function per client,
// never inlined, so `valgrind --tool=callgrind --collect-atstart=no
// --toggle-collect='*run_burst_redmux*'` counts exactly it. Setup (connect, DEL) and the
// check (GET) are outside it; the futures / replies are freed inside it, as a program would.
// No observer connection and no table: one line (or one JSON row) at the end.
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "bench.hpp"
#include "hiredis_client.hpp"

// Outside any namespace, so the function names callgrind matches are short and stable.
[[gnu::noinline]] long long run_burst_redmux(redmux::Database& db, const std::string& key,
                                             long long n,
                                             std::vector<redmux::Future<long long>>& futures) {
  for (long long i = 0; i < n; ++i) futures.push_back(db.incr(key));
  long long last = 0;
  for (auto& f : futures) last = f.get();
  futures.clear();  // frees every future's state inside the burst
  return last;
}

[[gnu::noinline]] long long run_burst_hiredis(redmux_bench::HiredisConnection& connection,
                                              const std::string& key, long long n) {
  for (long long i = 0; i < n; ++i) connection.append_incr(key);
  long long last = 0;
  for (long long i = 0; i < n; ++i) last = connection.read_integer();
  return last;
}

namespace redmux_bench {

int run_burst(const Options& options, long long commands) {
  redmux::Config config = redmux::Config::from_string(options.url);
  if (config.name.empty()) config.name = "redmux-bench-burst";
  const std::string key = "redmux-bench:burst:" + options.client;
  long long last = 0;
  Clock::time_point start, end;
  std::string server = config.endpoints.front().to_string();
  if (options.client == "redmux") {
    auto mux = redmux::Multiplexer::connect(config);
    std::atomic<long long> hooked{0};
    if (options.counting_hook) {
      mux->on_command([&hooked](const redmux::CommandEvent&) {
        hooked.fetch_add(1, std::memory_order_relaxed);
      });
    }
    redmux::Database db = mux->database();
    const redmux::ServerIdentity id = mux->server_identity();
    server = id.product + " " + id.version + " at " + server;
    (void)db.del(key).get();
    std::vector<redmux::Future<long long>> futures;
    futures.reserve(static_cast<std::size_t>(commands));
    start = Clock::now();
    last = run_burst_redmux(db, key, commands, futures);
    end = Clock::now();
    const std::optional<std::string> value = db.get(key).get();
    if (commands > 0 && value != std::to_string(commands)) last = -1;
    (void)db.del(key).get();
    // The hook saw every command: the DEL before the burst, the burst's and the GET after
    // (it runs after each delivery, so the last DEL's may still be running).
    if (options.counting_hook && hooked.load() < commands + 2) last = -1;
  } else if (options.client == "hiredis") {
    HiredisConnection connection(config);
    connection.del(key);  // setup and check through hiredis too: redmux is not touched
    start = Clock::now();
    last = run_burst_hiredis(connection, key, commands);
    end = Clock::now();
    if (commands > 0 && connection.get_counter(key) != commands) last = -1;
    connection.del(key);
  } else {
    std::fprintf(stderr, "burst: --client must be redmux or hiredis, not %s\n",
                 options.client.c_str());
    return 2;
  }
  const bool ok = last == commands;
  const double ms = ms_between(start, end);
  const double ops = commands > 0 && ms > 0 ? commands / (ms / 1000.0) : 0;
  if (options.json) {
    const nlohmann::ordered_json line = {{"scenario", "burst"},
                                         {"variant", "issue-then-await"},
                                         {"client", options.client},
                                         {"threads", 1},
                                         {"commands", commands},
                                         {"ops_per_sec", ops},
                                         {"p50_us", nullptr},
                                         {"p99_us", nullptr},
                                         {"ms", ms},
                                         {"ok", ok},
                                         {"server", server}};
    std::printf("%s\n", line.dump().c_str());
  } else {
    std::printf("burst: client=%s commands=%s in %.3f ms (%s ops/s) against %s: %s\n",
                options.client.c_str(), with_commas(commands).c_str(), ms, fixed(ops, 0).c_str(),
                server.c_str(), ok ? "ok, every reply arrived in order" : "FAILED count check");
  }
  return ok ? 0 : 1;
}

}  // namespace redmux_bench
