// monitor (seed 000, "redis-cli, MONITOR and Redis Insight"): a client sends MONITOR and stops
// reading (a hiredis connection with a small receive buffer, named stalled-monitor); N SETs
// of 512 bytes to one key go through a redmux multiplexer; the stalled client's omem and the
// server's used_memory before and after, what `redmux-cli --clients` prints about it, then
// CLIENT KILL and used_memory once the server has freed the buffer. Beside it, what a MONITOR
// that does read costs: redis-benchmark -t set -d 512 with no MONITOR, then with one whose
// replies a thread reads and drops (the seed: "writing quickly to /dev/null").
#include <atomic>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "hiredis_client.hpp"

#ifdef REDMUX_BENCH_WITH_CLI
#include "clients.hpp"
#endif

namespace redmux_bench {

namespace {

using namespace std::chrono_literals;

constexpr int kWindow = 1000;
constexpr int kValueBytes = 512;

std::optional<redmux::ClientInfo> client_named(Bench& bench, std::string_view name) {
  for (const redmux::ClientInfo& c : bench.observer().client_list().get()) {
    if (c.name == name) return c;
  }
  return std::nullopt;
}

// A MONITOR client: stalled (never reads after +OK) or reading (a thread drops every line).
class MonitorClient {
 public:
  MonitorClient(const Bench& bench, std::string name, bool reading) {
    connection_ = std::make_unique<HiredisConnection>(bench.config());
    if (!reading) connection_->set_receive_buffer(4096);
    connection_->command({"CLIENT", "SETNAME", name});
    connection_->command({"MONITOR"});
    if (reading) {
      reader_ = std::thread([this] {
        while (connection_->skip_reply()) lines_.fetch_add(1);
      });
    }
  }
  ~MonitorClient() {
    if (reader_.joinable()) reader_.join();  // ends when the server closes the connection
  }
  long long lines() const { return lines_.load(); }

 private:
  std::unique_ptr<HiredisConnection> connection_;
  std::atomic<long long> lines_{0};
  std::thread reader_;
};

void kill_client(Bench& bench, long long id) {
  (void)bench.admin().execute({"CLIENT", "KILL", "ID", std::to_string(id)}).get();
}

}  // namespace

void run_monitor(Bench& bench, long long sets, long long benchmark_requests) {
  Table table;
  table.title = "monitor: " + with_commas(sets) + " SETs of 512 bytes past a MONITOR nobody reads";
  table.shows =
      "an unread MONITOR keeps every command in the server's memory (normal clients have no "
      "output limit); CLIENT KILL gives it back. A MONITOR that reads costs throughput.";
  table.setup = bench.setup_line(
      "1 (redmux, windows of " + std::to_string(kWindow) + ") + 1 MONITOR (hiredis)",
      with_commas(sets) + " × SET of one key; redis-benchmark -t set -c 50 -n " +
          with_commas(benchmark_requests) + " -d 512",
      "512 bytes");
  const std::string key = Bench::key("monitor", "value");
  const std::string value(kValueBytes, 'x');

  auto mux = bench.connect("redmux-bench-monitor");
  redmux::Database db = mux->database();
  // N SETs in windows; returns the time they took.
  auto set_all = [&](const std::string& what) {
    Progress progress("monitor: " + with_commas(sets) + " SETs " + what);
    const auto start = Clock::now();
    std::vector<redmux::Future<bool>> window;
    window.reserve(kWindow);
    for (long long i = 0; i < sets;) {
      window.clear();
      for (int w = 0; w < kWindow && i < sets; ++w, ++i) window.push_back(db.set(key, value));
      for (auto& f : window) f.get();
    }
    return ms_between(start, Clock::now());
  };

  // 0. The same SETs with no MONITOR, for what the unread one costs the writer.
  Row alone;
  alone.scenario = "monitor";
  alone.variant = "sets-no-monitor";
  alone.client = "redmux";
  alone.threads = 1;
  alone.commands = sets;
  alone.ms = set_all("with no MONITOR");
  alone.ops_per_sec = static_cast<double>(sets) / (alone.ms / 1000.0);
  alone.add("set_ops_per_sec", alone.ops_per_sec, 0);
  alone.check = "no MONITOR";
  table.rows.push_back(std::move(alone));

  // 1. The unread MONITOR.
  const long long before = bench.info_integer("memory", "used_memory");
  auto stalled = std::make_unique<MonitorClient>(bench, "stalled-monitor", false);
  const double unread_ms = set_all("with an unread MONITOR");
  const std::optional<redmux::ClientInfo> monitor = client_named(bench, "stalled-monitor");
  const long long during = bench.info_integer("memory", "used_memory");
  const long long clients_normal = bench.info_integer("memory", "mem_clients_normal");
  Row unread;
  unread.scenario = "monitor";
  unread.variant = "unread-monitor";
  unread.client = "redmux";
  unread.threads = 1;
  unread.commands = sets;
  unread.ms = unread_ms;
  unread.ops_per_sec = static_cast<double>(sets) / (unread.ms / 1000.0);
  unread.add("set_ops_per_sec", unread.ops_per_sec, 0).with_seed(198413, 0);
  unread.add("omem_mib", mib(monitor ? monitor->omem : 0), 1).with_seed(106292736 / 1048576.0, 1);
  unread.add("used_memory_before_mib", mib(before), 1).with_seed(61, 0);
  unread.add("used_memory_with_monitor_mib", mib(during), 1).with_seed(162.35, 1);
  unread.add("mem_clients_normal_mib", mib(clients_normal), 1).with_seed(106303488 / 1048576.0, 1);
#ifdef REDMUX_BENCH_WITH_CLI
  if (monitor) {
    table.notes.push_back("redmux-cli --clients at that moment:");
    std::string text =
        redmux::cli::format_clients(bench.observer().client_list().get(), 32LL * 1024 * 1024);
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t nl = text.find('\n', at);
      table.notes.push_back("  " + text.substr(at, nl - at));
      at = nl == std::string::npos ? text.size() : nl + 1;
    }
  }
#endif
  // CLIENT KILL, then used_memory once the server has freed the buffer (it frees it
  // asynchronously: poll for up to 10 s).
  long long after = during;
  double freed_ms = -1;
  if (monitor) {
    const auto killed = Clock::now();
    kill_client(bench, monitor->id);
    stalled.reset();
    while (Clock::now() - killed < 10s) {
      after = bench.info_integer("memory", "used_memory");
      if (after < before + (during - before) / 10) break;
      std::this_thread::sleep_for(20ms);
    }
    freed_ms = ms_between(killed, Clock::now());
  }
  unread.add("used_memory_after_kill_mib", mib(after), 1);
  unread.add("freed_after_ms", freed_ms, 0);
  unread.ok = monitor.has_value() && monitor->omem > 0 && after < during &&
              client_named(bench, "stalled-monitor") == std::nullopt;
  unread.check = monitor ? "MONITOR id=" + std::to_string(monitor->id) + " killed, memory back"
                         : "the MONITOR client was not found in CLIENT LIST";
  if (!unread.ok && monitor) unread.check = "memory did not come back after CLIENT KILL";
  unread.variant = "unread-monitor";
  table.rows.push_back(std::move(unread));
  bench.del(key);

  // 2. What a reading MONITOR costs redis-benchmark's SET.
  RedisBenchmark run;
  run.test = "set";
  run.clients = 50;
  run.requests = benchmark_requests;
  run.data_size = kValueBytes;
  run.label = "monitor";
  Row plain;
  if (redis_benchmark_run(bench, run, plain, table.notes)) {
    plain.scenario = "monitor";
    plain.variant = "set-no-monitor";
    plain.add("monitor_lines", 0LL);
    plain.add("set_ops_per_sec", plain.ops_per_sec, 0).with_seed(292825, 0);
    Row with;
    std::optional<MonitorClient> reading;
    reading.emplace(bench, "reading-monitor", true);
    const bool ran = redis_benchmark_run(bench, run, with, table.notes);
    if (auto c = client_named(bench, "reading-monitor")) kill_client(bench, c->id);
    const long long lines = reading->lines();
    reading.reset();
    table.rows.push_back(std::move(plain));
    if (ran) {
      with.scenario = "monitor";
      with.variant = "set-reading-monitor";
      with.add("monitor_lines", lines);
      with.add("set_ops_per_sec", with.ops_per_sec, 0).with_seed(275103, 0);
      with.add("x_no_monitor", with.ops_per_sec / plain.ops_per_sec, 2)
          .with_seed(275103.0 / 292825.0, 2);
      table.rows.push_back(std::move(with));
    }
  }
  table.notes.push_back(
      "seed figures: seed 000 on Redis 8 — the stalled MONITOR's omem 106,292,736 bytes, "
      "used_memory 61 → 162.35 MB, mem_clients_normal 106,303,488 (its SETs came from "
      "redis-benchmark, 198,413/s); redis-benchmark SET 292,825/s, 275,103/s with a reading "
      "MONITOR.");
  table.notes.push_back(
      "omem counts the output not yet written to the socket: the kernel's socket buffers hold "
      "a little more (the stalled client's receive buffer is 4 KiB).");
  bench.report().print(table);
}

}  // namespace redmux_bench
